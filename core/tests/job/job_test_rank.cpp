// One rank of a job in a process of its own, for the job tests: it joins the job its environment
// names, writes "joined" on stdout (the test's gate), then does what its argument says:
//   wait       block until stdin ends (the test kills it, or closes stdin to let it leave)
//   exit CODE  end with exit code CODE at once, without leaving the job
//   fork       fork a process that holds every descriptor of the rank (as a data loader's worker
//              would) and sleeps, write "holder PID", then wait as `wait` does
//   exec       run another program (`sleep 60`) in the rank's process without leaving the job
// Anything else, or a failed join, prints the error on stderr and exits with 2.

#include "tandem/job.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    tandem::JoinOptions options;
    options.open_runtime = false;
    tandem::Result<tandem::Job> job = tandem::Job::join(options);
    if (!job) {
        std::fprintf(stderr, "%s", job.error().report().c_str());
        return 2;
    }
    std::printf("joined\n");
    std::fflush(stdout);
    if (mode == "exit" && argc > 2) {
        std::exit(std::atoi(argv[2]));  // Leaves the job object standing: no goodbye is said.
    }
    if (mode == "exec") {
        ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
        std::fprintf(stderr, "job_test_rank: exec failed\n");
        return 2;
    }
    if (mode == "fork") {
        const pid_t holder = ::fork();
        if (holder == 0) {
            ::pause();  // Until the test kills it.
            ::_exit(0);
        }
        std::printf("holder %d\n", static_cast<int>(holder));
        std::fflush(stdout);
    } else if (mode != "wait") {
        std::fprintf(stderr, "job_test_rank: unknown mode '%s'\n", mode.c_str());
        return 2;
    }
    char byte = 0;
    while (::read(STDIN_FILENO, &byte, 1) > 0) {
    }
    return 0;
}
