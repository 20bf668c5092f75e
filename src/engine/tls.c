/*
 * tls.c - GnuTLS client sessions to a Docker engine: run in the calling
 * thread for HTTP, or relayed to a socketpair so that the exec streams
 * keep working on a plain fd (tls.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "base/dynlib.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/tls.h"

/*
 * One buffer per direction: what a connection may hold in flight, besides
 * the sockets' own. 256 KiB takes an upload's piece in one recv, then sends
 * it as records without a poll between them (16 KiB, one record per pass,
 * cost 15% more CPU per 50 MiB). The buffers are calloc'd: a page is
 * resident only once a transfer used it.
 */
#define TLS_RELAY_BUF (256 * 1024)
/* The relay's stack: it calls GnuTLS record functions only. */
#define TLS_RELAY_STACK (256 * 1024)
/* A refusal explains a closed connection this soon after it (tls_take_refusal). */
#define TLS_REFUSAL_FRESH_MS 60000

/*
 * GnuTLS is opened when the first TLS engine is set up (base/dynlib.h):
 * loading it and its eight libraries at every exec took longer than the
 * rest of the server's start-up, and most servers talk to a local socket.
 */
#define TLS_GNUTLS_FUNCS(X)                             \
	X(gnutls_alert_get)                             \
	X(gnutls_alert_get_name)                        \
	X(gnutls_bye)                                   \
	X(gnutls_certificate_allocate_credentials)      \
	X(gnutls_certificate_client_get_request_status) \
	X(gnutls_certificate_free_credentials)          \
	X(gnutls_certificate_set_x509_key_file)         \
	X(gnutls_certificate_set_x509_system_trust)     \
	X(gnutls_certificate_set_x509_trust_file)       \
	X(gnutls_credentials_set)                       \
	X(gnutls_deinit)                                \
	X(gnutls_error_is_fatal)                        \
	X(gnutls_handshake)                             \
	X(gnutls_handshake_set_timeout)                 \
	X(gnutls_init)                                  \
	X(gnutls_record_check_pending)                  \
	X(gnutls_record_get_direction)                  \
	X(gnutls_record_recv)                           \
	X(gnutls_record_send)                           \
	X(gnutls_server_name_set)                       \
	X(gnutls_session_get_verify_cert_status)        \
	X(gnutls_session_set_verify_cert)               \
	X(gnutls_set_default_priority)                  \
	X(gnutls_strerror)                              \
	X(gnutls_transport_set_int2)

static struct {
#define DECLARE(fn) __typeof__(fn) *fn;
	TLS_GNUTLS_FUNCS(DECLARE)
#undef DECLARE
} gt;

static pthread_once_t gt_once = PTHREAD_ONCE_INIT;
static int gt_status; /* 0 loaded, -ENOENT not loadable */
static char gt_error[200];

static void gt_load(void)
{
	static const char *const sonames[] = { "libgnutls.so.30", "libgnutls.so", NULL };
	static const char *const names[] = {
#define NAME(fn) #fn,
		TLS_GNUTLS_FUNCS(NAME)
#undef NAME
	};
	void **const slots[] = {
#define SLOT(fn) (void **)&gt.fn,
		TLS_GNUTLS_FUNCS(SLOT)
#undef SLOT
	};
	gt_status = dynlib_open(sonames, names, slots, ARRAY_SIZE(names), gt_error, sizeof(gt_error));
}

static int gt_ready(struct err *err)
{
	pthread_once(&gt_once, gt_load);
	if (gt_status < 0)
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, gt_status,
			       "TLS: cannot load GnuTLS (%s): install the libgnutls30 package", gt_error);
	return 0;
}

struct tls_ctx {
	int refs; /* the owner's and one per live stream: a session must not outlive its credentials */
	gnutls_certificate_credentials_t cred;
	bool have_cert; /* a client certificate is configured */
	bool verify;	/* check the engine's certificate (false only for a context's SkipTLSVerify) */
	char ca[256];	/* for messages: where the trusted CA came from */
};

struct dir {
	char buf[TLS_RELAY_BUF];
	size_t len, off;
};

struct tls_stream {
	struct tls_ctx *t; /* a reference */
	gnutls_session_t s;
	int fd;		     /* the TCP socket under the session, non-blocking, owned */
	bool got_data;	     /* the engine has sent application data on this connection */
	atomic_bool aborted; /* tls_stream_abort: the close that follows is ours, not the engine's */
	/*
	 * A failure before any answer that may be the engine refusing our
	 * certificate (early_failure): published (refusal_note) only once a
	 * read fails too, or at close, still with no answer. An engine that
	 * answers an upload early and stops reading fails our send the same
	 * way, and then its answer is read.
	 */
	const char *suspect;
	bool ended;  /* the end came behind data: the next recv returns it */
	ssize_t end; /* that end: 0 or -errno */
};

struct relay {
	struct tls_stream *st;
	int app;	 /* our end of the socketpair, non-blocking */
	struct dir up;	 /* app -> engine */
	struct dir down; /* engine -> app */
	bool app_eof, net_eof, bye_done;
};

/*
 * Under TLS 1.3 an engine refuses a client certificate after our handshake
 * has succeeded, as an alert in place of the first answer; the HTTP layer
 * then sees only a closed connection. The stream notes the alert here before
 * it closes, and tls_take_refusal lets that error say what happened.
 */
static pthread_mutex_t refusal_lock = PTHREAD_MUTEX_INITIALIZER;
static char refusal[200];
static int64_t refusal_ms;

static void refusal_note(const char *alert)
{
	pthread_mutex_lock(&refusal_lock);
	snprintf(refusal, sizeof(refusal), "%s", alert ? alert : "alert");
	refusal_ms = now_ms();
	pthread_mutex_unlock(&refusal_lock);
}

bool tls_take_refusal(char *buf, size_t n)
{
	pthread_mutex_lock(&refusal_lock);
	bool have = refusal[0] && now_ms() - refusal_ms < TLS_REFUSAL_FRESH_MS;
	if (have)
		snprintf(buf, n, "%s", refusal);
	refusal[0] = '\0';
	pthread_mutex_unlock(&refusal_lock);
	return have;
}

static struct tls_ctx *ctx_ref(struct tls_ctx *t)
{
	__atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
	return t;
}

static void ctx_unref(struct tls_ctx *t)
{
	if (t && __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		gt.gnutls_certificate_free_credentials(t->cred);
		free(t);
	}
}

int tls_ctx_create(const char *ca, const char *cert, const char *key, bool verify, struct tls_ctx **ret,
		   struct err *err)
{
	int r = gt_ready(err);
	if (r < 0)
		return r;
	struct tls_ctx *t = xcalloc(1, sizeof(*t));
	r = gt.gnutls_certificate_allocate_credentials(&t->cred);

	t->refs = 1;
	t->verify = verify;
	if (r < 0) {
		free(t);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -ENOMEM, "TLS: %s", gt.gnutls_strerror(r));
	}
	if (ca) {
		r = gt.gnutls_certificate_set_x509_trust_file(t->cred, ca, GNUTLS_X509_FMT_PEM);
		if (r <= 0) {
			tls_ctx_destroy(t);
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EINVAL,
				       "TLS: cannot read a CA certificate from %s (%s): check DOCKER_CERT_PATH or --tlscacert",
				       ca, r == 0 ? "no certificate in it" : gt.gnutls_strerror(r));
		}
		snprintf(t->ca, sizeof(t->ca), "the CA in %s", ca);
	} else {
		r = gt.gnutls_certificate_set_x509_system_trust(t->cred);
		if (r < 0) {
			tls_ctx_destroy(t);
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EINVAL,
				       "TLS: no CA given and the system trust store cannot be read (%s): put ca.pem in "
				       "DOCKER_CERT_PATH or pass --tlscacert",
				       gt.gnutls_strerror(r));
		}
		snprintf(t->ca, sizeof(t->ca), "the system trust store (no ca.pem in DOCKER_CERT_PATH)");
	}
	if (cert || key) {
		if (!cert || !key) {
			tls_ctx_destroy(t);
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EINVAL,
				       "TLS: a client certificate needs both cert.pem and key.pem (--tlscert and --tlskey); "
				       "only %s was found",
				       cert ? cert : key);
		}
		r = gt.gnutls_certificate_set_x509_key_file(t->cred, cert, key, GNUTLS_X509_FMT_PEM);
		if (r < 0) {
			tls_ctx_destroy(t);
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EINVAL,
				       "TLS: cannot load the client certificate %s with key %s: %s", cert, key,
				       gt.gnutls_strerror(r));
		}
		t->have_cert = true;
	}
	*ret = t;
	return 0;
}

void tls_ctx_destroy(struct tls_ctx *t)
{
	ctx_unref(t);
}

static bool is_ip_literal(const char *host)
{
	unsigned char a[16];
	return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* The message of a failed handshake: which of the usual causes it was, and what to do. */
static int handshake_error(struct tls_ctx *t, gnutls_session_t s, int r, const char *host, const char *display,
			   struct err *err)
{
	if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		unsigned st = gt.gnutls_session_get_verify_cert_status(s);
		if (st & GNUTLS_CERT_SIGNER_NOT_FOUND)
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO,
				       "TLS: the engine at %s presented a certificate from an unknown CA (not signed by %s): "
				       "point DOCKER_CERT_PATH or --tlscacert at the engine's CA",
				       display, t->ca);
		if (st & GNUTLS_CERT_UNEXPECTED_OWNER)
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO,
				       "TLS: name mismatch: the engine's certificate is not valid for '%s': use the host "
				       "name or IP its certificate names (subjectAltName) in DOCKER_HOST",
				       host);
		if (st & (GNUTLS_CERT_EXPIRED | GNUTLS_CERT_NOT_ACTIVATED))
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO,
				       "TLS: the engine's certificate at %s is expired or not yet valid", display);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO,
			       "TLS: the engine's certificate at %s is not trusted (status 0x%x)", display, st);
	}
	if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
		gnutls_alert_description_t a = gt.gnutls_alert_get(s);
		const char *name = gt.gnutls_alert_get_name(a);
		if (a == GNUTLS_A_BAD_CERTIFICATE || a == GNUTLS_A_UNKNOWN_CA || a == GNUTLS_A_CERTIFICATE_REQUIRED ||
		    a == GNUTLS_A_UNSUPPORTED_CERTIFICATE || a == GNUTLS_A_CERTIFICATE_UNKNOWN ||
		    a == GNUTLS_A_HANDSHAKE_FAILURE)
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EACCES,
				       "TLS: the engine at %s refused the client certificate (%s): use a cert.pem/key.pem "
				       "signed by the CA the engine trusts (--tlscacert of dockerd)",
				       display, name ? name : "alert");
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO,
			       "TLS: the engine at %s ended the handshake (%s)", display, name ? name : "alert");
	}
	if (r == GNUTLS_E_TIMEDOUT)
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -ETIMEDOUT,
			       "TLS: the handshake with %s did not finish in time; check that the port is the engine's "
			       "TLS port (2376)",
			       display);
	if (r == GNUTLS_E_UNEXPECTED_PACKET_LENGTH || r == GNUTLS_E_UNSUPPORTED_VERSION_PACKET ||
	    r == GNUTLS_E_UNEXPECTED_PACKET)
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO,
			       "TLS: %s does not answer in TLS (%s): it may be a plain-HTTP port; unset "
			       "DOCKER_TLS_VERIFY or use the engine's TLS port",
			       display, gt.gnutls_strerror(r));
	return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO, "TLS: handshake with %s failed: %s", display,
		       gt.gnutls_strerror(r));
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

/*
 * A connection that fails or ends before the engine sent any answer. Its
 * alert says why; but an engine that refuses our certificate after a TLS
 * 1.3 handshake closes with our request unread, so the kernel may send a
 * reset that overtakes the alert, or the alert is lost and only the close
 * is seen (CI saw both). With a client certificate offered, such a reset
 * or close is noted as the likely refusal.
 */
static void early_failure(struct tls_stream *st, int n)
{
	if (st->got_data || atomic_load(&st->aborted))
		return;
	if (n == GNUTLS_E_FATAL_ALERT_RECEIVED)
		st->suspect = gt.gnutls_alert_get_name(gt.gnutls_alert_get(st->s));
	else if (st->t->have_cert && (n == GNUTLS_E_PULL_ERROR || n == GNUTLS_E_PUSH_ERROR))
		st->suspect = "the connection was reset before any answer, as a TLS 1.3 engine does when it "
			      "refuses the client certificate";
	else if (st->t->have_cert && (n == 0 || n == GNUTLS_E_PREMATURE_TERMINATION))
		st->suspect = "the connection was closed before any answer, as a TLS 1.3 engine does when it "
			      "refuses the client certificate";
}

/* The suspected refusal becomes the note tls_take_refusal reads, if no answer came after all. */
static void publish_refusal(struct tls_stream *st)
{
	if (st->suspect && !st->got_data && !atomic_load(&st->aborted))
		refusal_note(st->suspect);
	st->suspect = NULL;
}

int tls_stream_fd(const struct tls_stream *st)
{
	return st->fd;
}

void tls_stream_abort(struct tls_stream *st)
{
	atomic_store(&st->aborted, true);
	shutdown(st->fd, SHUT_RDWR);
}

bool tls_stream_pending(struct tls_stream *st)
{
	return gt.gnutls_record_check_pending(st->s) > 0;
}

/* One gnutls_record_recv as read(2) on a non-blocking socket would answer. */
static ssize_t recv_record(struct tls_stream *st, void *buf, size_t n)
{
	ssize_t got;
	do
		got = gt.gnutls_record_recv(st->s, buf, n);
	while (got == GNUTLS_E_INTERRUPTED);
	if (got > 0) {
		st->got_data = true;
		return got;
	}
	if (got == GNUTLS_E_AGAIN)
		return -EAGAIN;
	early_failure(st, (int)got);
	publish_refusal(st);
	if (got == 0 || got == GNUTLS_E_PREMATURE_TERMINATION)
		return 0;
	log_debugf("TLS: read: %s", gt.gnutls_strerror((int)got));
	return got == GNUTLS_E_PULL_ERROR ? -ECONNRESET : -EPROTO;
}

/*
 * Records come one per gnutls_record_recv (16 KiB at most): as many as
 * have arrived are taken in one call, so a reader asking for 64 KiB does
 * not go back to poll for each. An end (EOF or an error) found behind
 * data is kept for the next call: GnuTLS will not report it twice.
 */
ssize_t tls_stream_recv(struct tls_stream *st, void *buf, size_t n)
{
	size_t have = 0;
	if (st->ended)
		return st->end;
	while (have < n) {
		ssize_t got = recv_record(st, (char *)buf + have, n - have);
		if (got <= 0) {
			if (!have)
				return got;
			if (got != -EAGAIN) {
				st->ended = true;
				st->end = got;
			}
			break;
		}
		have += (size_t)got;
	}
	return (ssize_t)have;
}

/*
 * The wait is bounded by a deadline that moves only with progress: a
 * socket that polls ready while GnuTLS still cannot send (it waits to
 * read, say) must not spin forever.
 */
int tls_stream_send_all(struct tls_stream *st, const void *p, size_t n, int timeout_ms)
{
	size_t off = 0;
	int64_t deadline = now_ms() + timeout_ms;
	while (off < n) {
		/* after GNUTLS_E_AGAIN the same call is repeated with the same arguments, as GnuTLS asks */
		ssize_t w = gt.gnutls_record_send(st->s, (const char *)p + off, n - off);
		if (w >= 0) {
			off += (size_t)w;
			deadline = now_ms() + timeout_ms;
			continue;
		}
		if (w == GNUTLS_E_INTERRUPTED)
			continue;
		if (w != GNUTLS_E_AGAIN) {
			early_failure(st, (int)w);
			/* GnuTLS reports a peer's close under our send as a premature termination */
			return w == GNUTLS_E_PUSH_ERROR || w == GNUTLS_E_PREMATURE_TERMINATION ? -EPIPE : -EPROTO;
		}
		int64_t left = deadline - now_ms();
		struct pollfd pfd = { .fd = st->fd,
				      .events = gt.gnutls_record_get_direction(st->s) ? POLLOUT : POLLIN };
		int r = left > 0 ? poll(&pfd, 1, (int)left) : 0;
		if (r == 0)
			return -EAGAIN;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

void tls_stream_close(struct tls_stream *st)
{
	if (!st)
		return;
	publish_refusal(st);
	gt.gnutls_deinit(st->s);
	close(st->fd);
	ctx_unref(st->t);
	free(st);
}

/* One pass engine -> app. false when the relay must end. */
static bool pump_down(struct relay *rl)
{
	struct dir *d = &rl->down;

	if (d->len == 0 && !rl->net_eof) {
		ssize_t n = recv_record(rl->st, d->buf, sizeof(d->buf));
		if (n > 0) {
			d->len = (size_t)n;
			d->off = 0;
		} else if (n == 0) {
			rl->net_eof = true;
			(void)shutdown(rl->app, SHUT_WR);
		} else if (n != -EAGAIN) {
			return false;
		}
	}
	while (d->off < d->len) {
		ssize_t w = send(rl->app, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0)
			return errno == EAGAIN || errno == EINTR;
		d->off += (size_t)w;
	}
	d->len = d->off = 0;
	return true;
}

/* One pass app -> engine. false when the relay must end. */
static bool pump_up(struct relay *rl)
{
	struct dir *u = &rl->up;
	gnutls_session_t s = rl->st->s;

	if (u->len == 0 && !rl->app_eof) {
		ssize_t n = recv(rl->app, u->buf, sizeof(u->buf), MSG_DONTWAIT);
		if (n > 0) {
			u->len = (size_t)n;
			u->off = 0;
		} else if (n == 0) {
			rl->app_eof = true;
		} else if (errno != EAGAIN && errno != EINTR) {
			return false;
		}
	}
	while (u->off < u->len) {
		/* after GNUTLS_E_AGAIN the same call is repeated with the same arguments, as GnuTLS asks */
		ssize_t w = gt.gnutls_record_send(s, u->buf + u->off, u->len - u->off);
		if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED)
			return true;
		if (w < 0) {
			early_failure(rl->st, (int)w);
			return false;
		}
		u->off += (size_t)w;
	}
	u->len = u->off = 0;
	if (rl->app_eof && !rl->bye_done) {
		/* the caller's shutdown(SHUT_WR): a close_notify, which the engine reads as EOF */
		int r = gt.gnutls_bye(s, GNUTLS_SHUT_WR);
		if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
			return true;
		rl->bye_done = true;
	}
	return true;
}

static void *relay_main(void *arg)
{
	struct relay *rl = arg;
	gnutls_session_t s = rl->st->s;

	for (;;) {
		if (!pump_down(rl) || !pump_up(rl))
			break;
		if (rl->net_eof && rl->down.len == 0 && rl->app_eof && rl->bye_done)
			break;
		if (gt.gnutls_record_check_pending(s) > 0 && rl->down.len == 0)
			continue;
		struct pollfd p[2] = { { .fd = rl->st->fd }, { .fd = rl->app } };
		if (rl->down.len == 0 && !rl->net_eof)
			p[0].events |= POLLIN;
		if (rl->up.len > 0 || (rl->app_eof && !rl->bye_done))
			p[0].events |= gt.gnutls_record_get_direction(s) ? POLLOUT : POLLIN;
		if (rl->up.len == 0 && !rl->app_eof)
			p[1].events |= POLLIN;
		if (rl->down.len > 0)
			p[1].events |= POLLOUT;
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		/* the caller closed or aborted (shutdown both ways) its end: nobody reads any more */
		if ((p[1].revents & (POLLHUP | POLLERR)) && (rl->app_eof || (p[1].revents & POLLERR)))
			break;
		if ((p[0].revents & (POLLHUP | POLLERR)) && !(p[0].revents & POLLIN) && rl->down.len == 0 &&
		    !rl->net_eof) {
			rl->net_eof = true;
			(void)shutdown(rl->app, SHUT_WR);
		}
	}
	tls_stream_close(rl->st);
	close(rl->app);
	free(rl);
	return NULL;
}

int tls_relay(struct tls_stream *st, int *ret_fd, struct err *err)
{
	int sv[2];
	pthread_attr_t attr;
	pthread_t th;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		tls_stream_close(st);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -errno, "TLS: socketpair: %s", strerror(errno));
	}
	struct relay *rl = xcalloc(1, sizeof(*rl));
	rl->st = st;
	rl->app = sv[1];
	int r = set_nonblock(sv[1]);
	if (r == 0 && (r = -pthread_attr_init(&attr)) == 0) {
		(void)pthread_attr_setstacksize(&attr, TLS_RELAY_STACK);
		(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		r = -pthread_create(&th, &attr, relay_main, rl);
		pthread_attr_destroy(&attr);
	}
	if (r < 0) {
		close(sv[0]);
		close(sv[1]);
		free(rl);
		tls_stream_close(st);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r, "TLS: cannot start the relay: %s", strerror(-r));
	}
	*ret_fd = sv[0];
	return 0;
}

/* A session on tcp_fd with our priorities, credentials, and the checks of host. */
static int session_new(struct tls_ctx *t, int tcp_fd, const char *host, gnutls_session_t *ret)
{
	gnutls_session_t s;
	/* MSG_NOSIGNAL on every send: an engine gone away is an error, never SIGPIPE */
	int r = gt.gnutls_init(&s, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL);
	if (r < 0)
		return r;
	if ((r = gt.gnutls_set_default_priority(s)) == 0 &&
	    (r = gt.gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, t->cred)) == 0 && !is_ip_literal(host))
		r = gt.gnutls_server_name_set(s, GNUTLS_NAME_DNS, host, strlen(host));
	if (r < 0) {
		gt.gnutls_deinit(s);
		return r;
	}
	/* verifies the chain and that the certificate names host (DNS or IP subjectAltName) */
	if (t->verify)
		gt.gnutls_session_set_verify_cert(s, host, 0);
	gt.gnutls_transport_set_int2(s, tcp_fd, tcp_fd);
	*ret = s;
	return 0;
}

int tls_open(struct tls_ctx *t, int tcp_fd, const char *host, const char *display, int timeout_ms,
	     struct tls_stream **ret, struct err *err)
{
	gnutls_session_t s;
	int r = session_new(t, tcp_fd, host, &s);

	if (r < 0) {
		close(tcp_fd);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EPROTO,
			       "TLS: cannot set up a session with %s: %s", display, gt.gnutls_strerror(r));
	}
	gt.gnutls_handshake_set_timeout(s, (unsigned)timeout_ms);
	do
		r = gt.gnutls_handshake(s);
	while (r < 0 && !gt.gnutls_error_is_fatal(r));
	if (r < 0) {
		r = handshake_error(t, s, r, host, display, err);
	} else if (gt.gnutls_certificate_client_get_request_status(s) && !t->have_cert) {
		/*
		 * An engine run with --tlsverify asks for a client certificate.
		 * Under TLS 1.3 it refuses a missing one only after our side of
		 * the handshake is done, as a bare disconnect: say it here,
		 * where it is clear.
		 */
		r = err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EACCES,
			    "TLS: the engine at %s requires a client certificate and none is configured: put "
			    "cert.pem and key.pem in DOCKER_CERT_PATH (default ~/.docker) or pass --tlscert and --tlskey",
			    display);
	} else if ((r = set_nonblock(tcp_fd)) < 0) {
		err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r, "TLS: %s", strerror(-r));
	}
	if (r < 0) {
		gt.gnutls_deinit(s);
		close(tcp_fd);
		return r;
	}
	struct tls_stream *st = xcalloc(1, sizeof(*st));
	st->t = ctx_ref(t);
	st->s = s;
	st->fd = tcp_fd;
	*ret = st;
	return 0;
}
