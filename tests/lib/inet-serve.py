# inet-serve.py - one host of the egress tests' offline internet
# (tests/lib/egressnet.mjs): serves a folder over HTTPS on 443 and HTTP on
# 80, with the test CA's certificate for its names, and writes one JSON line
# per request (the TLS server name, the Host header, the path) to a log the
# test reads: a canary host's log shows whether anything reached it.
#
# Paths with a ".git/" in them go to git's smart HTTP backend (git
# http-backend as CGI, ROOT/cgi-bin/git-http-backend), so a forge can take
# pushes as well as clones.
#
# usage: python3 inet-serve.py CERT KEY ROOT LOG
import functools
import http.server
import json
import os
import socketserver
import ssl
import sys
import threading

cert, key, root, log = sys.argv[1:5]
lock = threading.Lock()


def note(**kw):
    with lock, open(log, 'a') as f:
        f.write(json.dumps(kw) + '\n')


class Handler(http.server.CGIHTTPRequestHandler):
    cgi_directories = ['/cgi-bin']
    # through pipes, not a forked child writing to the socket: the socket speaks TLS
    have_fork = False

    def is_cgi(self):
        if '.git/' in self.path and os.path.exists(os.path.join(root, 'cgi-bin', 'git-http-backend')):
            self.cgi_info = ('/cgi-bin', 'git-http-backend' + self.path)
            return True
        return False

    def log_message(self, fmt, *args):
        pass

    def note(self):
        sni = getattr(self.connection, 'sni', None)
        note(sni=sni, host=self.headers.get('Host'), path=self.path, method=self.command)

    def do_GET(self):
        self.note()
        if self.is_cgi():
            self.run_cgi()
            return
        # /redirect?to=URL: a 302 there, for the proxy to judge when the client follows it
        if self.path.startswith('/redirect?to='):
            self.send_response(302)
            self.send_header('Location', self.path.split('=', 1)[1])
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        super().do_GET()

    def do_HEAD(self):
        self.note()
        super().do_HEAD()

    def do_POST(self):
        self.note()
        if self.is_cgi():
            self.run_cgi()
            return
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n)
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class TLSServer(Server):
    def get_request(self):
        sock, addr = super().get_request()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        seen = {}
        ctx.sni_callback = lambda s, name, c: seen.__setitem__('sni', name)
        tls = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        try:
            tls.settimeout(10)
            tls.do_handshake()
            tls.settimeout(None)
        except Exception as e:
            note(sni=seen.get('sni'), error=str(e)[:200])
            raise
        tls.sni = seen.get('sni')
        return tls, addr

    def shutdown_request(self, request):
        # close_notify before the close: a body that ends with the connection
        # (CGI output has no length) is complete only then for GnuTLS clients
        try:
            request.settimeout(2)
            request.unwrap()
        except Exception:
            pass
        super().shutdown_request(request)


handler = functools.partial(Handler, directory=root)
plain = Server(('0.0.0.0', 80), handler)
threading.Thread(target=plain.serve_forever, daemon=True).start()
secure = TLSServer(('0.0.0.0', 443), handler)
print('ready', flush=True)
secure.serve_forever()
