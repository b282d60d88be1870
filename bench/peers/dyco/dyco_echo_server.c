// SPDX-License-Identifier: Apache-2.0
// dyco_echo_server: the churn scenario's echo server on dyco-coroutine, the C coroutine
// library with socket hooks (github.com/piaodazhu/dyco-coroutine), built from dyco's
// sources by build.sh. Plain blocking code, as in dyco's own socket_server example: one
// coroutine accepts, one coroutine per connection runs recv/send until EOF, then close.
// dyco's COROUTINE_HOOK (on in its header) replaces socket, accept, recv, send and close
// with versions that wait on its scheduler's epoll, one thread. What this adds to the
// example: a port from the command line, 127.0.0.1, a listen backlog of SOMAXCONN
// instead of 20, TCP_NODELAY, no line printed per message, and one ready line.
#define _GNU_SOURCE  // dyco's header defines it first thing: the same for every header here
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>

#include "dyco/dyco_coroutine.h"

static const char usage[] =
    "usage: dyco_echo_server --port P\n"
    "Echoes every byte back on every TCP connection of 127.0.0.1:P (0: any free port), one\n"
    "thread: a dyco coroutine per connection running blocking recv/send/close through\n"
    "dyco's hooks. Prints one line once it listens; SIGINT or SIGTERM ends it at once.\n";

static int listener = -1;

// The whole life of one connection, as in a thread-per-connection echo server. dyco's
// recv gives up waiting after 3 s with EAGAIN; a blocking server just reads again.
static void serve_connection(void* arg) {
  int fd = (int)(intptr_t)arg;
  char buf[1024];  // the size dyco's example reads: the shared stack is copied per switch
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    if (send(fd, buf, (size_t)n, 0) != n) break;
  }
  close(fd);
}

static void accept_loop(void* arg) {
  (void)arg;
  const int one = 1;
  for (;;) {
    int fd = accept(listener, NULL, NULL);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) dyco_coroutine_sleep(1);  // let connections close
      continue;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (dyco_coroutine_create(serve_connection, (void*)(intptr_t)fd) < 0) close(fd);
  }
}

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static int bad_usage(void) {
  fputs(usage, stderr);
  return 2;
}

int main(int argc, char** argv) {
  long port = -1;
  for (int i = 1; i < argc; ++i) {
    const char* value = NULL;
    if (strcmp(argv[i], "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
      value = argv[++i];
    } else if (strncmp(argv[i], "--port=", 7) == 0) {
      value = argv[i] + 7;
    } else {
      return bad_usage();
    }
    char* end = NULL;
    errno = 0;
    port = strtol(value, &end, 10);
    if (errno || end == value || *end || port < 0 || port > 65535) return bad_usage();
  }
  if (port < 0) return bad_usage();

  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, stop);
  signal(SIGTERM, stop);

  listener = socket(AF_INET, SOCK_STREAM, 0);  // dyco's socket: O_NONBLOCK, SO_REUSEADDR
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, SOMAXCONN) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
    fprintf(stderr, "dyco_echo_server: cannot listen on 127.0.0.1:%ld: %s\n", port, strerror(errno));
    return 1;
  }
  printf("dyco_echo_server: listening on 127.0.0.1:%d, 1 thread (a dyco %s coroutine per connection)\n",
         ntohs(addr.sin_port), DYCO_VERSION);
  fflush(stdout);
  if (dyco_coroutine_create(accept_loop, NULL) < 0) return 1;
  dyco_schedule_run();
  return 1;  // the scheduler returns only when no coroutine is left
}
