import subprocess, sys, os
code1 = "import sys, dynorm; print('aiobotocore' in sys.modules, 'aiohttp' in sys.modules)"
r = subprocess.run([sys.executable, "-c", code1], capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
print(("SAFE: " if r.stdout.strip().startswith("False False") else "BUG: ") + f"import dynorm does not import aiobotocore/aiohttp ({r.stdout.strip()} {r.stderr[-200:]})")
code2 = """
import sys; sys.modules['aiobotocore'] = None; sys.modules['aiobotocore.session'] = None
import asyncio, dynorm
from dynorm import Entity, Table, fields
dynorm.configure(endpoint='http://127.0.0.1:8714')
class T(Table):
    class Meta: table_name='noaio'
class E(Entity):
    a = fields.String()
    class Meta:
        table = T; entity_type='E'; pk='{version}#E#{a}'; sk='M'
async def m():
    await E.objects.aget(a='x')
try:
    asyncio.run(m())
except Exception as e:
    print(type(e).__name__, str(e))
"""
r = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = r.stdout.strip()
print(("SAFE: " if "dynorm[async]" in out else "BUG: ") + f"missing aiobotocore gives a clear error ({out[:200]} {r.stderr[-300:]})")
