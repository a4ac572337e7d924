#!/bin/sh
# End-to-end security checks: TLS certificates are verified (a self-signed
# server is refused before any request is sent); the API key, a recognisable
# one, shows in no output, error, log, database or process list, whether
# the request fails or succeeds. Usage: security.sh RUNMON FAKE_WANDB
set -eu
runmon=$1
fake=$2
. "$(dirname "$0")/common.sh"
cd "$tmp"
KEY=cafe0123456789abcdefRECOGNISABLE0123456789
export WANDB_API_KEY=$KEY

# 1. A W&B endpoint with a self-signed certificate: refused, no retry loop
# forever, no request body (with the key) sent.
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 -subj /CN=127.0.0.1 \
	>/dev/null 2>&1 || fail "openssl could not make a test certificate"
python3 - <<'PY' &
import http.server, ssl
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        open("requests.log", "a").write(self.path + "\n")
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"data": {}}')
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("cert.pem", "key.pem")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open("tls.port", "w").write(str(srv.server_address[1]))
srv.serve_forever()
PY
pids="$pids $!"
for _ in $(seq 50); do [ -s tls.port ] && break; sleep 0.1; done
code=0
WANDB_BASE_URL="https://127.0.0.1:$(cat tls.port)" "$runmon" --db t.db sync --retry-max 1 --retry-wait 0.1 \
	acme/llm/r1 >out.tls 2>err.tls || code=$?
[ "$code" = 3 ] || fail "self-signed server: exit $code: $(cat err.tls)"
grep -qi "certificate\|SSL" err.tls || fail "the certificate problem is not named: $(cat err.tls)"
[ ! -s requests.log ] || fail "a request reached a server whose certificate failed"

# 2. The key is in no process list entry while runmon works, and nowhere
# in what it leaves behind, on success and on a rejected key.
rm -f port
"$fake" --port-file port --key "$KEY" --log fake.log --run "acme/llm/r1:steps=20000" --latency-ms 40 &
pids="$pids $!"
for _ in $(seq 50); do [ -s port ] && break; sleep 0.1; done
export WANDB_BASE_URL="http://127.0.0.1:$(cat port)"
"$runmon" --db s.db sync --jobs 1 acme/llm/r1 >out.sync 2>err.sync &
victim=$!
seen=0
for _ in $(seq 20); do
	# The process may end between the test and the read: not a failure.
	if tr '\0' ' ' <"/proc/$victim/cmdline" >>cmdlines 2>/dev/null; then
		seen=1
	fi
	ps -eo args | grep "runmon --db" | grep -v fake_wandb >>ps.out || true # the fake server's own --key aside
	sleep 0.05
done
wait $victim || fail "sync failed: $(cat err.sync)"
[ "$seen" = 1 ] || fail "sync ended before its command line could be read"
grep -q "sync" cmdlines && grep -q "sync" ps.out || fail "process list not read"
WANDB_API_KEY=wrong0123456789abcdef0123456789abcdef0 "$runmon" --db s.db sync acme/llm/r1 >out.bad 2>err.bad && fail "a wrong key was accepted"
grep -q "401\|rejected\|key" err.bad || fail "a rejected key is not explained: $(cat err.bad)"
"$runmon" --db s.db watch --once acme/llm/r1 >out.watch 2>err.watch || fail "watch: $(cat err.watch)"
for f in cmdlines ps.out out.* err.* s.db* t.db*; do
	[ -e "$f" ] || continue
	if grep -q "$KEY" "$f"; then fail "the API key is in $f"; fi
done
# 3. A user and password in WANDB_BASE_URL (issue 49.6) show nowhere: not
# in sync's errors, diagnose's run URL, the report's link or the store.
creds="http://wbuser:hunter2pw@127.0.0.1:$(cat port)"
WANDB_BASE_URL=$creds "$runmon" --db s.db sync acme/llm/nosuchrun >out.creds 2>err.creds && fail "a missing run was synced"
grep -q "not found on http://127.0.0.1:" err.creds || fail "the missing run is not explained: $(cat err.creds)"
WANDB_BASE_URL=$creds "$runmon" --db s.db diagnose acme/llm/r1 >>out.creds 2>>err.creds || [ $? = 1 ] || fail "diagnose: $(cat err.creds)"
grep -q "http://127.0.0.1:[0-9]*/acme/llm/runs/r1" out.creds || fail "no run URL: $(cat out.creds)"
WANDB_BASE_URL=$creds "$runmon" --db s.db report -o report.html acme/llm/r1 >>out.creds 2>>err.creds || [ $? = 1 ] \
	|| fail "report: $(cat err.creds)"
for f in out.creds err.creds report.html s.db*; do
	if grep -q "hunter2pw\|wbuser" "$f"; then fail "the base URL's password is in $f"; fi
done
echo "security: all checks passed"
