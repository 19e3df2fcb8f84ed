// A program that makes a simulator runtime of two devices, writes its memory, prints the names
// its segments were created under (one a line) and then ends the way its one argument says:
// return, exit (std::exit(1)), abort, throw (an uncaught exception), sigpipe (a write to a pipe
// no one reads, as `| head` does), sigterm, sigint or sigkill. sim_segment_test.cpp runs it and
// looks in /dev/shm afterwards.

#include "tandem/sim/runtime.hpp"

#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

/// Ends the process as `how` says; returns only for "return" or a word it does not know.
int end_as(const std::string& how) {
    if (how == "exit") {
        std::exit(1);
    }
    if (how == "abort") {
        std::abort();
    }
    if (how == "throw") {
        throw std::runtime_error("thrown on purpose and never caught");
    }
    if (how == "sigpipe") {
        // As a shell pipeline leaves it, whatever the parent ignored.
        std::signal(SIGPIPE, SIG_DFL);
        int ends[2];
        if (::pipe(ends) != 0) {
            return 3;
        }
        ::close(ends[0]);
        (void)!::write(ends[1], "x", 1);
        return 3;  // Not reached: the write raised SIGPIPE.
    }
    const int signal_number = how == "sigterm" ? SIGTERM
                              : how == "sigint"  ? SIGINT
                              : how == "sigkill" ? SIGKILL
                                                 : 0;
    if (signal_number != 0) {
        std::signal(signal_number, SIG_DFL);
        std::raise(signal_number);
        return 3;  // Not reached.
    }
    return how == "return" ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: segment_ending return|exit|abort|throw|sigpipe|sigterm|"
                             "sigint|sigkill\n");
        return 2;
    }
    auto runtime =
        tandem::sim::SimRuntime::create(tandem::sim::SimOptions{.capacity_bytes = 8 << 20});
    if (!runtime) {
        std::fprintf(stderr, "%s", runtime.error().report().c_str());
        return 3;
    }
    tandem::Client client = (*runtime)->client(0);
    auto handle = client.allocate(1 << 20);
    if (!handle || !client.write(*handle, std::vector<std::byte>(1 << 20, std::byte{1}))) {
        std::fprintf(stderr, "cannot allocate or write the runtime's memory\n");
        return 3;
    }
    for (const std::string& name : (*runtime)->segment_names()) {
        std::printf("%s\n", name.c_str());
    }
    std::fflush(stdout);
    return end_as(argv[1]);
}
