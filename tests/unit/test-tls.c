/*
 * test-tls.c - the HTTP client over TLS in the calling thread (tls.c,
 * endpoint_connect_http) against a real GnuTLS server on loopback, for
 * what only a TLS peer does: an engine that answers an upload early and
 * closes, and an answer whose last record and close come together. The
 * certificates (a CA, the server's for 127.0.0.1, a client's) are made
 * here with GnuTLS, into a temporary folder.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/util.h"
#include "engine/endpoint.h"
#include "engine/http.h"
#include "engine/tls.h"

struct pki {
	char dir[64];
	char ca[96], cert[96], key[96], server_cert[96], server_key[96];
};

static struct pki pki;

/* Writes what export puts out, in PEM, to path. */
static void write_pem(const char *path, const gnutls_datum_t *d)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(d->data, 1, d->size, f), d->size);
	assert_int_equal(fclose(f), 0);
}

static gnutls_x509_privkey_t new_key(const char *path)
{
	gnutls_x509_privkey_t k;
	gnutls_datum_t d;
	assert_int_equal(gnutls_x509_privkey_init(&k), 0);
	assert_int_equal(gnutls_x509_privkey_generate(k, GNUTLS_PK_ECDSA,
						      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
			 0);
	assert_int_equal(gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &d), 0);
	write_pem(path, &d);
	gnutls_free(d.data);
	return k;
}

/* A certificate for key, signed by the CA (or itself when ca is NULL), written to path. */
static gnutls_x509_crt_t new_cert(const char *path, gnutls_x509_privkey_t key, const char *cn, int serial,
				  gnutls_x509_crt_t ca, gnutls_x509_privkey_t ca_key, bool server)
{
	gnutls_x509_crt_t c;
	gnutls_datum_t d;
	unsigned char ser = (unsigned char)serial;
	time_t now = time(NULL);
	assert_int_equal(gnutls_x509_crt_init(&c), 0);
	assert_int_equal(gnutls_x509_crt_set_version(c, 3), 0);
	assert_int_equal(gnutls_x509_crt_set_serial(c, &ser, 1), 0);
	assert_int_equal(gnutls_x509_crt_set_activation_time(c, now - 3600), 0);
	assert_int_equal(gnutls_x509_crt_set_expiration_time(c, now + 86400), 0);
	assert_int_equal(gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn)), 0);
	assert_int_equal(gnutls_x509_crt_set_key(c, key), 0);
	assert_int_equal(gnutls_x509_crt_set_basic_constraints(c, ca == NULL, -1), 0);
	if (!ca) {
		assert_int_equal(gnutls_x509_crt_set_key_usage(c, GNUTLS_KEY_KEY_CERT_SIGN), 0);
	} else {
		assert_int_equal(gnutls_x509_crt_set_key_usage(c, GNUTLS_KEY_DIGITAL_SIGNATURE), 0);
		assert_int_equal(gnutls_x509_crt_set_key_purpose_oid(c,
								     server ? GNUTLS_KP_TLS_WWW_SERVER
									    : GNUTLS_KP_TLS_WWW_CLIENT,
								     0),
				 0);
	}
	if (server) {
		unsigned char ip[4] = { 127, 0, 0, 1 };
		assert_int_equal(gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_IPADDRESS, ip, 4, GNUTLS_FSAN_SET),
				 0);
	}
	assert_int_equal(gnutls_x509_crt_sign2(c, ca ? ca : c, ca ? ca_key : key, GNUTLS_DIG_SHA256, 0), 0);
	assert_int_equal(gnutls_x509_crt_export2(c, GNUTLS_X509_FMT_PEM, &d), 0);
	write_pem(path, &d);
	gnutls_free(d.data);
	return c;
}

static int setup_pki(void **state)
{
	(void)state;
	snprintf(pki.dir, sizeof(pki.dir), "/tmp/test-tls-XXXXXX");
	assert_non_null(mkdtemp(pki.dir));
	snprintf(pki.ca, sizeof(pki.ca), "%s/ca.pem", pki.dir);
	snprintf(pki.cert, sizeof(pki.cert), "%s/cert.pem", pki.dir);
	snprintf(pki.key, sizeof(pki.key), "%s/key.pem", pki.dir);
	snprintf(pki.server_cert, sizeof(pki.server_cert), "%s/server-cert.pem", pki.dir);
	snprintf(pki.server_key, sizeof(pki.server_key), "%s/server-key.pem", pki.dir);
	char ca_key_path[96];
	snprintf(ca_key_path, sizeof(ca_key_path), "%s/ca-key.pem", pki.dir);
	gnutls_x509_privkey_t ca_key = new_key(ca_key_path);
	gnutls_x509_crt_t ca = new_cert(pki.ca, ca_key, "test CA", 1, NULL, NULL, false);
	gnutls_x509_privkey_t skey = new_key(pki.server_key);
	gnutls_x509_crt_t scrt = new_cert(pki.server_cert, skey, "engine", 2, ca, ca_key, true);
	gnutls_x509_privkey_t ckey = new_key(pki.key);
	gnutls_x509_crt_t ccrt = new_cert(pki.cert, ckey, "client", 3, ca, ca_key, false);
	gnutls_x509_crt_deinit(ccrt);
	gnutls_x509_privkey_deinit(ckey);
	gnutls_x509_crt_deinit(scrt);
	gnutls_x509_privkey_deinit(skey);
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_privkey_deinit(ca_key);
	unlink(ca_key_path);
	return 0;
}

static int teardown_pki(void **state)
{
	(void)state;
	const char *files[] = { pki.ca, pki.cert, pki.key, pki.server_cert, pki.server_key };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(files[i]);
	rmdir(pki.dir);
	return 0;
}

/* What the server thread does after its handshake. */
enum script {
	EARLY_404,	 /* reads the request head, answers 404 and closes with the body unread */
	DATA_THEN_CLOSE, /* reads the head, sends an answer to EOF and closes without close_notify */
};

struct engine {
	int lfd, port;
	enum script script;
	gnutls_certificate_credentials_t cred;
	pthread_t thread;
};

static void read_head(gnutls_session_t s)
{
	char buf[4096];
	size_t n = 0;
	while (n < sizeof(buf)) {
		ssize_t g = gnutls_record_recv(s, buf + n, 1);
		if (g <= 0)
			return;
		n += (size_t)g;
		if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0)
			return;
	}
}

static void *engine_main(void *arg)
{
	struct engine *e = arg;
	gnutls_session_t s;
	int fd = accept(e->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL);
	gnutls_set_default_priority(s);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, e->cred);
	gnutls_transport_set_int(s, fd);
	int r;
	do
		r = gnutls_handshake(s);
	while (r < 0 && !gnutls_error_is_fatal(r));
	if (r == 0) {
		read_head(s);
		const char
			*a = e->script == EARLY_404
				     ? "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\nConnection: close\r\n\r\nnope\n"
				     : "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello";
		(void)gnutls_record_send(s, a, strlen(a));
		if (e->script == EARLY_404)
			usleep(100 *
			       1000); /* the answer on its way before the reset that a close with unread bytes sends */
	}
	close(fd); /* no close_notify, as a proxy or a crashed engine would end */
	gnutls_deinit(s);
	return NULL;
}

static void engine_start(struct engine *e, enum script script)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	e->script = script;
	assert_int_equal(gnutls_certificate_allocate_credentials(&e->cred), 0);
	assert_int_equal(gnutls_certificate_set_x509_key_file(e->cred, pki.server_cert, pki.server_key,
							      GNUTLS_X509_FMT_PEM),
			 0);
	e->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(e->lfd >= 0);
	assert_int_equal(bind(e->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(e->lfd, (struct sockaddr *)&sa, &sl), 0);
	e->port = ntohs(sa.sin_port);
	assert_int_equal(listen(e->lfd, 1), 0);
	assert_int_equal(pthread_create(&e->thread, NULL, engine_main, e), 0);
}

static void engine_stop(struct engine *e)
{
	pthread_join(e->thread, NULL);
	close(e->lfd);
	gnutls_certificate_free_credentials(e->cred);
}

/* A connection to e through its endpoint, with this test's CA and client certificate. */
static struct http_conn *connect_to(struct engine *e, struct endpoint *ep)
{
	char host[64];
	struct err err;
	struct http_conn *c = NULL;
	struct endpoint_tls tt = { .verify = true, .ca = pki.ca, .cert = pki.cert, .key = pki.key };
	snprintf(host, sizeof(host), "tcp://127.0.0.1:%d", e->port);
	err_clear(&err);
	assert_int_equal(endpoint_open(host, &tt, ep, &err), 0);
	int r = endpoint_connect_http(ep, 5000, 5000, &c, &err);
	if (r < 0)
		fail_msg("connect: %s", err.msg);
	return c;
}

/*
 * An engine that refuses an upload answers before it has read the body and
 * closes: our send fails as it would if the engine refused our client
 * certificate. The answer is read, and no refusal is noted for a later
 * error to report.
 */
static void test_early_answer_is_no_refusal(void **state)
{
	(void)state;
	struct engine e;
	struct endpoint ep;
	struct http_response resp;
	struct err err;
	char note[200];
	size_t n = 16 << 20;
	char *body = xcalloc(1, n);

	engine_start(&e, EARLY_404);
	struct http_conn *c = connect_to(&e, &ep);
	(void)tls_take_refusal(note, sizeof(note));
	err_clear(&err);
	int r = http_request_send(c, "PUT", "/containers/x/archive?path=/nope", NULL, body, n, &err);
	assert_true(r == 0 || err.code == ERRCODE_DOCKER_UNAVAILABLE);
	err_clear(&err);
	r = http_response_recv(c, false, &resp, &err);
	if (r < 0)
		fail_msg("the early answer was not read: %s", err.msg);
	assert_int_equal(resp.status, 404);
	http_conn_destroy(c);
	engine_stop(&e);
	endpoint_release(&ep);
	bool noted = tls_take_refusal(note, sizeof(note));
	if (noted)
		fail_msg("an early answer was noted as a refused certificate: %s", note);
	free(body);
}

/* The answer's last record and the engine's close read in one go: the body ends, it does not fail. */
static void test_data_then_close(void **state)
{
	(void)state;
	struct engine e;
	struct endpoint ep;
	struct http_response resp;
	struct err err;
	struct buf out;

	engine_start(&e, DATA_THEN_CLOSE);
	struct http_conn *c = connect_to(&e, &ep);
	err_clear(&err);
	assert_int_equal(http_request_send(c, "GET", "/version", NULL, NULL, 0, &err), 0);
	usleep(200 * 1000); /* the record and the FIN both there before the first read */
	assert_int_equal(http_response_recv(c, false, &resp, &err), 0);
	assert_int_equal(resp.status, 200);
	buf_init(&out, 1024);
	int r = http_body_read_all(c, &out, &err);
	if (r < 0)
		fail_msg("a body read to the engine's close failed: %s", err.msg);
	assert_int_equal(out.len, 5);
	assert_memory_equal(out.data, "hello", 5);
	buf_finish(&out);
	http_conn_destroy(c);
	engine_stop(&e);
	endpoint_release(&ep);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_early_answer_is_no_refusal),
		cmocka_unit_test(test_data_then_close),
	};
	return cmocka_run_group_tests(tests, setup_pki, teardown_pki);
}
