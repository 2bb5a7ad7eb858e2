# service.py SECONDS — a steady service workload for tests/bench/ingest.sh:
# a threaded HTTP server that renders and compresses JSON for GETs and
# hashes the bodies of POSTs, driven for SECONDS by two keep-alive clients
# on the same machine.  Unlike the compile loop, the same code paths run
# over and over, as in most long-running services.
import hashlib, http.client, http.server, json, os, sys, threading, time, zlib

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        items = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", str(i % 7)]} for i in range(200)]
        body = zlib.compress(json.dumps(items).encode(), 6)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers["Content-Length"])
        data = self.rfile.read(n)
        digest = hashlib.sha256(data).hexdigest().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(digest)))
        self.end_headers()
        self.wfile.write(digest)

def client(port, end):
    c = http.client.HTTPConnection("127.0.0.1", port)
    payload = os.urandom(64 * 1024)
    while time.time() < end:
        c.request("GET", "/")
        r = c.getresponse(); json.loads(zlib.decompress(r.read()))
        c.request("POST", "/", body=payload)
        c.getresponse().read()

secs = float(sys.argv[1])
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
end = time.time() + secs
ts = [threading.Thread(target=client, args=(srv.server_address[1], end)) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
srv.shutdown()
