"""A webhook receiver that checks each delivery the way Eka Care's webhook consumer does
(eka-care/ekapython-webhook-sdk, and ../shared/reference/eka/webhook-signature.mdx): the body is
parsed, written again with json.dumps(body, separators=(',', ':')), and the hex HMAC-SHA256 of
"<t>.<that text>", keyed with the signing key's text, must equal the header's v1 (the header read
into a dict, so the last v1 counts), with t within 180 s of now.

It checks the body two ways: parsed as sent, and after the sample Lambda's unescaping step
(body.encode('utf-8').decode('unicode_escape')) before parsing.

    SIGNING_KEYS='{"/a": "<key>"}' python3 eka_consumer.py

The key is chosen by the request path. Prints the port, then one JSON line per request; answers
200 when the parsed-as-sent check passes, 403 otherwise.
"""
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

KEYS = json.loads(os.environ["SIGNING_KEYS"])
TOLERANCE_SECONDS = 180


def check(key, text, header):
    """(verified, reason, canonical text) for one way of reading the body."""
    try:
        payload = json.loads(text)
    except ValueError as error:
        return False, "unparsable body: %s" % error, None
    canonical = json.dumps(payload, separators=(",", ":"))
    if not header:
        return False, "missing signature", canonical
    try:
        parts = dict(item.split("=") for item in header.split(","))
        timestamp = parts["t"]
        signature = parts["v1"]
    except Exception:
        return False, "invalid signature format", canonical
    if abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        return False, "outside the tolerance", canonical
    expected = hmac.new(key.encode(), ("%s.%s" % (timestamp, canonical)).encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return False, "invalid signature", canonical
    return True, None, canonical


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        text = raw.decode("utf-8")
        header = self.headers.get("Eka-Webhook-Signature")
        key = KEYS.get(self.path, "")
        verified, reason, canonical = check(key, text, header)
        unescaped_verified, unescaped_reason, _ = check(key, text.encode("utf-8").decode("unicode_escape"), header)
        record = {
            "path": self.path,
            "verified": verified,
            "reason": reason,
            "unescaped_verified": unescaped_verified,
            "unescaped_reason": unescaped_reason,
            "body_is_canonical": canonical == text,
            "ascii_only": all(byte < 128 for byte in raw),
            "header": header,
            "body": json.loads(text),
        }
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
        self.send_response(200 if verified else 403)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
sys.stdout.write("%d\n" % server.server_address[1])
sys.stdout.flush()
server.serve_forever()
