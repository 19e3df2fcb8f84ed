// Two ranks, one process each (`tandem launch -n 2 -- ./two_ranks`): rank 0 publishes a buffer,
// a kernel on rank 1 writes it and fails, and a read on rank 0 fails on that cause, named on
// rank 1, instead of returning stale bytes. The two-device example, across a process boundary.
#include <tandem/job.hpp>

#include <cstdio>
#include <cstdlib>

using namespace tandem;

void check(const Status& status) {
    if (!status) {
        std::fprintf(stderr, "%s", status.error().report().c_str());
        std::exit(1);
    }
}

int main() {
    auto job = Job::join();
    if (!job) {
        std::fprintf(stderr, "%s", job.error().report().c_str());
        return 1;
    }
    Client device = job->runtime()->client(0);
    if (job->rank() == 0) {
        // Rank 0 fills a buffer, lets rank 1's device bind it, and publishes it.
        Handle buffer = *device.allocate(1024);
        check(device.launch("fill", LaunchConfig::linear(1024), {{buffer, AccessMode::Write}},
                            KernelArgs().u64(1)));
        check(device.grant_peer_access(*job->service(1)));
        check(job->publish("buffer", buffer));
        check(job->barrier());  // Rank 1 writes the buffer in between.
        auto read = device.read(buffer);
        if (read) {
            std::puts("the read returned bytes a failed kernel should have written");
            return 1;
        }
        std::printf("%s", read.error().report().c_str());
    } else {
        // A kernel on rank 1 writes rank 0's buffer and reports failure code 7 from inside.
        Handle buffer = *job->lookup("buffer");
        check(device.launch("fail", LaunchConfig::linear(1), {{buffer, AccessMode::Write}},
                            KernelArgs().u64(7)));
        check(job->barrier());
    }
    return 0;
}
