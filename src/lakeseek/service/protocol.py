"""The HTTP protocol ``lakeseek serve`` runs: uvicorn's httptools protocol, whose answer to a
request it cannot parse is one line of JSON, as the service answers every other error.

uvicorn answers such a request itself, before the application sees it, with plain text
("Invalid HTTP request received."): a query string over httptools' longest URL, a
malformed request line or header. A client of the service reads every error the same way.
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from lakeseek.service.app import error_document

# httptools.parse_url refuses a longer URL (llhttp's limit).
LONGEST_URL = 65_535


class JsonErrorsProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        url = getattr(self, "url", b"")
        if len(url) > LONGEST_URL:
            status, reason = 414, "URI Too Long"
            message = (
                f"the request's URL is {len(url):,} bytes, over the {LONGEST_URL:,} the service reads: "
                "POST the parameters as a JSON body instead"
            )
        else:
            status, reason = 400, "Bad Request"
            message = "malformed HTTP request: its request line or a header cannot be parsed"
        body = json.dumps(error_document(status, message), separators=(",", ":")).encode()
        head = [f"HTTP/1.1 {status} {reason}\r\n".encode()]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
