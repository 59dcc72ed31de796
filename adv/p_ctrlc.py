import subprocess, signal, time, os, socket, sys
exe = "/work/wt/adv12/.venv/bin/dynorm"
def listening(port):
    with socket.socket() as s:
        s.settimeout(0.5); return s.connect_ex(("127.0.0.1", port)) == 0
for delay in (0.5, 0.9, 1.3):
    port = 8640 + int(delay * 10)
    p = subprocess.Popen([exe, "local", "start", "--port", str(port)], preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(delay); p.send_signal(signal.SIGINT); out = p.communicate(timeout=30)[0]
    time.sleep(5)
    up = listening(port)
    stop = subprocess.run([exe, "local", "stop"], capture_output=True, text=True).stdout.strip()
    time.sleep(1)
    still = listening(port)
    print(f"delay {delay}: rc={p.returncode} out={out.strip().splitlines()[-1][:80] if out.strip() else ''!r} up_after={up} stop={stop!r} still_up_after_stop={still}")
    if still:
        print(("BUG: " if still else "SAFE: ") + f"Ctrl-C during `dynorm local start` leaves an orphan DynamoDB Local on {port} that `dynorm local stop` cannot stop")
        pids = subprocess.run(["pgrep", "-f", f"-port {port}"], capture_output=True, text=True).stdout.split()
        for pid in pids: os.kill(int(pid), signal.SIGTERM)
