import asyncio, time, gc, os, resource
import aiobotocore.session
from botocore.config import Config
async def build(session):
    t = time.perf_counter()
    ctx = session.create_client("dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:8714",
                                aws_access_key_id="x", aws_secret_access_key="y", config=Config(parameter_validation=False))
    c = await ctx.__aenter__()
    dt = time.perf_counter() - t
    await ctx.__aexit__(None, None, None)
    return dt
async def main():
    s = aiobotocore.session.get_session()
    fresh = [await build(aiobotocore.session.get_session()) for _ in range(5)]
    reused = [await build(s) for _ in range(5)]
    print(f"NOTE client build blocking the loop: fresh session {[round(x*1000) for x in fresh]} ms, reused session {[round(x*1000) for x in reused]} ms")
asyncio.run(main())
