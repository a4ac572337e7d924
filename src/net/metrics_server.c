/*
 * metrics_server.c - the HTTP endpoint of `watch --metrics` (libmicrohttpd).
 *
 * One polling thread of libmicrohttpd's own serves every connection with
 * non-blocking sockets, so a scraper that stalls holds only its own
 * connection, until the timeout closes it. The watch loop hands over a new
 * rendering with rm_metrics_server_publish; a scrape copies the current one
 * under the mutex. Paths as Prometheus' own components have them: the
 * metrics path, /-/healthy (200 while serving) and /-/ready (503 until
 * the first tick has run).
 *
 * A client trickling a header line every few seconds is never idle, so
 * each connection also has a total deadline: a request must be answered
 * within REQUEST_DEADLINE seconds of the connection's start or of its last
 * answer, else a watchdog thread shuts the socket down (libmicrohttpd
 * notifies a close before it closes the descriptor, and the table of
 * descriptors is kept under the server's mutex, so the watchdog never
 * touches a descriptor that was closed). One client address may hold at
 * most PER_CLIENT_LIMIT connections, so slots stay for the others.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runmon/net.h"

#define CONNECTION_LIMIT   64
#define CONNECTION_TIMEOUT 10 /* seconds a connection may sit idle or stalled */
#define REQUEST_DEADLINE   10 /* seconds a request may take in all */
#define PER_CLIENT_LIMIT   8  /* connections from one address */

struct conn_slot {
	int fd; /* -1: free */
	int cut;
	struct timespec since; /* the connection's start, or its last answer */
};

struct rm_metrics_server {
	struct MHD_Daemon *daemon;
	char *path;
	pthread_mutex_t mu;
	char *text; /* the latest rendering */
	size_t len;
	int ready;
	struct conn_slot conns[CONNECTION_LIMIT + 8]; /* under mu */
	pthread_t watchdog;
	pthread_cond_t wake;
	int stopping, watching;
};

static void now_mono(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static double since_s(const struct timespec *t)
{
	struct timespec n;
	now_mono(&n);
	return (double)(n.tv_sec - t->tv_sec) + (double)(n.tv_nsec - t->tv_nsec) / 1e9;
}

/* A connection opened or closed: its descriptor joins or leaves the table. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct rm_metrics_server *s = cls;
	pthread_mutex_lock(&s->mu);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		for (size_t i = 0; ci && i < sizeof(s->conns) / sizeof(s->conns[0]); i++)
			if (s->conns[i].fd < 0) {
				s->conns[i].fd = ci->connect_fd;
				s->conns[i].cut = 0;
				now_mono(&s->conns[i].since);
				*socket_context = &s->conns[i];
				break;
			}
	} else if (*socket_context) {
		((struct conn_slot *)*socket_context)->fd = -1;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&s->mu);
}

/* A request answered: the connection's deadline starts again. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct rm_metrics_server *s = cls;
	(void)con_cls;
	(void)toe;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	pthread_mutex_lock(&s->mu);
	if (ci && ci->socket_context)
		now_mono(&((struct conn_slot *)ci->socket_context)->since);
	pthread_mutex_unlock(&s->mu);
}

/* Every half second: shuts down the sockets of requests past their deadline
 * (libmicrohttpd then sees the connection end and closes it). */
static void *watchdog(void *arg)
{
	struct rm_metrics_server *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!s->stopping) {
		for (size_t i = 0; i < sizeof(s->conns) / sizeof(s->conns[0]); i++) {
			struct conn_slot *c = &s->conns[i];
			if (c->fd >= 0 && !c->cut && since_s(&c->since) > REQUEST_DEADLINE) {
				shutdown(c->fd, SHUT_RDWR);
				c->cut = 1;
			}
		}
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 500000000L;
		if (t.tv_nsec >= 1000000000L)
			t.tv_sec++, t.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&s->wake, &s->mu, &t);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static const char exposition_type[] = "text/plain; version=0.0.4; charset=utf-8";

/* s as an HTML attribute value may hold it: & < > " ' as references (the
 * path is checked where it is given; a caller may not have). */
static void attr_escape(const char *s, char *out, size_t n)
{
	size_t o = 0;
	for (; *s && o + 7 < n; s++) {
		const char *ref = *s == '&'    ? "&amp;"
		                  : *s == '<'  ? "&lt;"
		                  : *s == '>'  ? "&gt;"
		                  : *s == '"'  ? "&quot;"
		                  : *s == '\'' ? "&#39;"
		                               : NULL;
		if (ref) {
			memcpy(out + o, ref, strlen(ref));
			o += strlen(ref);
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mode);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text_reply(struct MHD_Connection *c, unsigned status, const char *body)
{
	return reply(c, status, "text/plain; charset=utf-8", body, strlen(body), MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct rm_metrics_server *s = cls;
	(void)version;
	(void)upload;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return text_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method Not Allowed\n");
	if (!*state) { /* the headers; a GET body, if any, is ignored */
		*state = s;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (!strcmp(url, s->path)) {
		pthread_mutex_lock(&s->mu);
		enum MHD_Result ret =
		    s->text ? reply(c, MHD_HTTP_OK, exposition_type, s->text, s->len, MHD_RESPMEM_MUST_COPY)
		            : text_reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "No metrics yet\n");
		pthread_mutex_unlock(&s->mu);
		return ret;
	}
	if (!strcmp(url, "/-/healthy"))
		return text_reply(c, MHD_HTTP_OK, "runmon watch is Healthy.\n");
	if (!strcmp(url, "/-/ready")) {
		pthread_mutex_lock(&s->mu);
		int ready = s->ready;
		pthread_mutex_unlock(&s->mu);
		return ready ? text_reply(c, MHD_HTTP_OK, "runmon watch is Ready.\n")
		             : text_reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "Service Unavailable\n");
	}
	if (!strcmp(url, "/")) {
		char href[6 * 256];
		attr_escape(s->path, href, sizeof(href));
		char *page = rm_xasprintf("<html><head><title>runmon watch</title></head><body><h1>runmon watch</h1>"
		                          "<p><a href=\"%s\">Metrics</a></p></body></html>\n",
		                          href);
		enum MHD_Result ret =
		    reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", page, strlen(page), MHD_RESPMEM_MUST_FREE);
		return ret;
	}
	return text_reply(c, MHD_HTTP_NOT_FOUND, "Not Found\n");
}

/* "PORT", ":PORT", "ADDR:PORT" or "[V6]:PORT" into host and port. */
static int split_spec(const char *spec, char *host, size_t nhost, char *port, size_t nport)
{
	const char *colon = strrchr(spec, ':');
	const char *p = colon ? colon + 1 : spec;
	size_t hl = colon ? (size_t)(colon - spec) : 0;
	const char *h = spec;
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']') {
		h++;
		hl -= 2;
	} else if (colon && memchr(spec, ':', hl)) {
		return -1; /* a bare IPv6 address wants brackets */
	}
	if (!*p || strlen(p) >= nport || strspn(p, "0123456789") != strlen(p) || strtol(p, NULL, 10) > 65535 ||
	    hl >= nhost)
		return -1;
	if (hl)
		snprintf(host, nhost, "%.*s", (int)hl, h);
	else
		snprintf(host, nhost, "127.0.0.1");
	snprintf(port, nport, "%s", p);
	return 0;
}

/* A listening socket of our own, so that a failure says why (EADDRINUSE,
 * EACCES) rather than libmicrohttpd's bare NULL. */
static int listen_on(const char *spec, int *fd_out, char *bound, size_t n, struct rm_err *err)
{
	char host[256], port[8];
	if (split_spec(spec, host, sizeof(host), port, sizeof(port)))
		return rm_err_set(err, RM_E_USAGE,
		                  "--metrics wants ADDR:PORT (127.0.0.1:9464, [::1]:9464) or PORT, not '%s'", spec);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc)
		return rm_err_set(err, RM_E_USAGE, "--metrics %s: %s", spec, gai_strerror(rc));
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 32)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return rm_err_set(err, RM_E_NET, "cannot listen on %s for --metrics: %s", spec, strerror(e));
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char addr[INET6_ADDRSTRLEN] = "?";
	int p = 0;
	if (!getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof(addr));
			p = ntohs(a->sin6_port);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, addr, sizeof(addr));
			p = ntohs(a->sin_port);
		}
	}
	snprintf(bound, n, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", addr, p);
	*fd_out = fd;
	return RM_OK;
}

int rm_metrics_server_start(const char *spec, const char *path, struct rm_metrics_server **out, char *url, size_t n,
                            struct rm_err *err)
{
	char bound[96];
	int fd = -1;
	if (listen_on(spec, &fd, bound, sizeof(bound), err))
		return err->code;
	struct rm_metrics_server *s = rm_xcalloc(1, sizeof(*s));
	s->path = rm_xstrdup(path);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->wake, NULL);
	for (size_t i = 0; i < sizeof(s->conns) / sizeof(s->conns[0]); i++)
		s->conns[i].fd = -1;
	s->daemon =
	    MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC, 0, NULL, NULL, on_request, s,
	                     MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, CONNECTION_LIMIT,
	                     MHD_OPTION_PER_IP_CONNECTION_LIMIT, PER_CLIENT_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
	                     (unsigned)CONNECTION_TIMEOUT, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
	                     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	if (s->daemon)
		s->watching = !pthread_create(&s->watchdog, NULL, watchdog, s);
	if (!s->daemon || !s->watching) {
		if (s->daemon)
			MHD_stop_daemon(s->daemon);
		else
			close(fd);
		pthread_cond_destroy(&s->wake);
		pthread_mutex_destroy(&s->mu);
		free(s->path);
		free(s);
		return rm_err_set(err, RM_E_NET, "cannot start the --metrics server on %s", bound);
	}
	snprintf(url, n, "http://%s%s", bound, path);
	*out = s;
	return RM_OK;
}

void rm_metrics_server_publish(struct rm_metrics_server *s, char *text, size_t len)
{
	pthread_mutex_lock(&s->mu);
	char *old = s->text;
	s->text = text;
	s->len = len;
	pthread_mutex_unlock(&s->mu);
	free(old);
}

void rm_metrics_server_ready(struct rm_metrics_server *s)
{
	pthread_mutex_lock(&s->mu);
	s->ready = 1;
	pthread_mutex_unlock(&s->mu);
}

void rm_metrics_server_stop(struct rm_metrics_server *s)
{
	if (!s)
		return;
	/* Quiesced, the daemon gives the listening socket back instead of
	 * closing it on stop; otherwise stop closes it. */
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->watchdog, NULL);
	MHD_socket fd = MHD_quiesce_daemon(s->daemon);
	MHD_stop_daemon(s->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->mu);
	free(s->text);
	free(s->path);
	free(s);
}
