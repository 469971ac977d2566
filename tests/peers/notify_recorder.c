/* SPDX-License-Identifier: MIT */
/*
 * notify_recorder PORT OUT_FILE [FAIL_FIRST]: an HTTP server on 127.0.0.1:PORT (0: a free one,
 * printed on stdout) that appends "PATH BODY" to OUT_FILE for every POST and answers 200, or
 * 503 to the first FAIL_FIRST requests. SIGUSR1 takes it down (every POST answered 503 and not
 * kept, as a receiver that is failing), SIGUSR2 brings it back. A webhook target and an
 * Alertmanager receiver for the shell tests; runs until SIGTERM or SIGINT.
 */
#include <signal.h>
#include <unistd.h>

#include "notify_recorder.h"

int main(int argc, char **argv)
{
    static struct rec r;
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s PORT OUT_FILE [FAIL_FIRST]\n", argv[0]);
        return 2;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    r.out_file = argv[2];
    r.fail_next = argc == 4 ? atoi(argv[3]) : 0;
    if (rec_start(&r, atoi(argv[1])) != 0) {
        fprintf(stderr, "%s: cannot listen on 127.0.0.1:%s\n", argv[0], argv[1]);
        return 1;
    }
    printf("%d\n", r.port);
    fflush(stdout);
    int sig;
    while (sigwait(&set, &sig) == 0 && (sig == SIGUSR1 || sig == SIGUSR2))
        rec_set_down(&r, sig == SIGUSR1);
    rec_stop(&r);
    return 0;
}
