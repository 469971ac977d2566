#!/usr/bin/env bash
# Malformed and hostile requests against the real daemon: huge headers, bodies on GET, invalid
# UTF-8 and percent-encoding in paths, and slow-loris connections (silent, and trickling a byte
# at a time) are refused or cut, while the daemon keeps serving everyone else.
source "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/empty"
export WATTAGE_SYSFS_ROOT=$TMP/empty WATTAGE_PROCFS_ROOT=$TMP/empty
export WATTAGE_NVML_LIBRARY=$FAKE_NVML FAKE_NVML_GPUS=8
PORT=$(free_port)
bg "$BIN" run --listen "127.0.0.1:$PORT" --db "$TMP/w.db" 2>"$TMP/wattage.log"
if ! wait_for 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz"; then
    not_ok "the daemon starts" "$(cat "$TMP/wattage.log")"
    finish
fi
ok "the daemon starts"

# raw REQUEST_BYTES (a Python bytes literal): sends it as is, prints the status code of the
# answer, or "closed" when the server closed without one
raw() {
    python3 - "$PORT" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
try:
    s.sendall(eval(sys.argv[2]))  # test-only, the script's own literals
except OSError:
    pass
data = b""
try:
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError:
    pass
line = data.split(b"\r\n")[0].split()
print(line[1].decode() if len(line) > 1 and line[0].startswith(b"HTTP/") else "closed")
PY
}
serving() { [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics") == 200 ]]; }

# --- the slow lorises start first and run while the rest goes on
python3 - "$PORT" >"$TMP/loris.out" 2>&1 <<'PY' &
import socket, sys, threading, time
port = int(sys.argv[1])
res = {}
def silent():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    t0 = time.time()
    s.settimeout(30)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    res["silent"] = time.time() - t0
def trickle():
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.time()
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 400
    try:
        for b in req:
            s.sendall(bytes([b]))
            time.sleep(0.5)
        res["trickle"] = "never cut"
        return
    except OSError:
        pass
    res["trickle"] = time.time() - t0
ts = [threading.Thread(target=silent), threading.Thread(target=trickle)]
for t in ts:
    t.start()
for t in ts:
    t.join(40)
print(f"silent {res.get('silent')}")
print(f"trickle {res.get('trickle')}")
PY
LORIS=$!
T_PIDS="$T_PIDS $LORIS"

# --- huge headers
c=$(raw 'b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n"')
check "a 100 kB header is refused (got $c)" bash -c '[[ $0 == 431 || $0 == 413 || $0 == 400 || $0 == closed ]]' "$c"
c=$(raw 'b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 60) for i in range(2000)) + b"\r\n"')
check "2000 headers are refused (got $c)" bash -c '[[ $0 == 431 || $0 == 413 || $0 == 400 || $0 == closed ]]' "$c"
c=$(raw 'b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"')
check "a 100 kB request line is refused (got $c)" bash -c '[[ $0 == 414 || $0 == 431 || $0 == 400 || $0 == closed ]]' "$c"
check "still serving after huge headers" serving

# --- bodies on GET
c=$(raw 'b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"')
check "GET with a body: 400 (got $c)" test "$c" = 400
c=$(raw 'b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"')
check "GET with a chunked body: 400 (got $c)" test "$c" = 400
c=$(raw 'b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nxx"')
check "HEAD announcing a body: 400 (got $c)" test "$c" = 400
c=$(raw 'b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"')
check "GET with Content-Length: 0 is fine (got $c)" test "$c" = 200
c=$(raw 'b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n" + b"x" * 1000')
check "POST of 100 MB to a read-only path: 405, body not read (got $c)" test "$c" = 405
check "still serving after bodies" serving

# --- paths
c=$(raw 'b"GET /metrics\xff HTTP/1.1\r\nHost: x\r\n\r\n"')
check "raw invalid UTF-8 in the path: 400 (got $c)" test "$c" = 400
c=$(raw 'b"GET /metrics%ff%fe HTTP/1.1\r\nHost: x\r\n\r\n"')
check "percent-encoded invalid UTF-8: 400 (got $c)" test "$c" = 400
c=$(raw 'b"GET /a%c0%af HTTP/1.1\r\nHost: x\r\n\r\n"')
check "an overlong UTF-8 slash: 400 (got $c)" test "$c" = 400
c=$(raw 'b"GET /a%0d%0aX-Injected:%201 HTTP/1.1\r\nHost: x\r\n\r\n"')
check "encoded CR LF in the path: 400 (got $c)" test "$c" = 400
c=$(raw 'b"GET /metrics%00 HTTP/1.1\r\nHost: x\r\n\r\n"')
check "an encoded NUL is not decoded: 404 (got $c)" test "$c" = 404
c=$(raw 'b"GET /%zz%4 HTTP/1.1\r\nHost: x\r\n\r\n"')
check "malformed percent-encoding: 404 (got $c)" test "$c" = 404
c=$(raw 'b"GET /metric%73 HTTP/1.1\r\nHost: x\r\n\r\n"')
check "valid percent-encoding is decoded: /metric%73 is 200 (got $c)" test "$c" = 200
c=$(raw 'b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n"')
check "valid UTF-8 in an unknown path: 404 (got $c)" test "$c" = 404
c=$(raw 'b"GARBAGE\r\n\r\n"')
check "a garbage request line is refused (got $c)" bash -c '[[ $0 == 400 || $0 == closed ]]' "$c"
c=$(raw 'b"GET /metrics HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"')
check "a header line without a colon is refused (got $c)" bash -c '[[ $0 == 400 || $0 == closed ]]' "$c"
c=$(raw 'b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n"')
check "an unknown HTTP version is refused (got $c)" bash -c '[[ $0 == 505 || $0 == 400 || $0 == closed ]]' "$c"
check "still serving after bad paths" serving

# --- the slow lorises are cut; meanwhile the daemon serves
ok_during=0
for _ in $(seq 1 10); do serving && ok_during=$((ok_during + 1)); sleep 0.5; done
check "served normally while slow clients hang on ($ok_during/10)" test "$ok_during" = 10
wait "$LORIS"
silent=$(awk '/^silent/{print $2}' "$TMP/loris.out")
trickle=$(awk '/^trickle/{print $2}' "$TMP/loris.out")
check "a silent half-sent request is cut within 15 s (after $silent s)" \
    python3 -c 'import sys; t = float(sys.argv[1]); assert 5 <= t <= 15, t' "$silent"
check "a request trickling a byte every 0.5 s is cut within 15 s (after $trickle s)" \
    python3 -c 'import sys; t = float(sys.argv[1]); assert 5 <= t <= 15, t' "$trickle"
check "still serving after the slow lorises" serving

# --- one address cannot take every connection: 140 from 127.0.0.1, the limit is 128
res=$(python3 - "$PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
socks, served, refused = [], 0, 0
for i in range(140):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    socks.append(s)
    time.sleep(0.002)
for s in socks:
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = s.recv(4096)
    except OSError:
        data = b""
    if data.startswith(b"HTTP/1.1 200"):
        served += 1
    else:
        refused += 1
for s in socks:
    s.close()
print(served, refused)
PY
)
check "per-address connection limit: at most 128 served, the rest refused (got $res)" \
    bash -c 'read -r a b <<<"$0"; (( a >= 120 && a <= 128 && a + b == 140 ))' "$res"
wait_for 5 serving
check "still serving once they are gone" serving
check "the daemon is alive and healthy" test "$(curl -s "http://127.0.0.1:$PORT/healthz")" = '{"status":"ok"}'
finish
