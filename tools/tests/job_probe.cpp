// A rank for the tests of `tandem launch`: it joins the job its environment names, with its
// runtime, prints one line saying so, then does what its arguments say:
//   check WORLD       the world size is WORLD and the runtime has TANDEM_DEVICES devices
//   exit RANK CODE    rank RANK exits with CODE without leaving; the others wait for its loss
//   kill RANK         rank RANK kills itself with SIGKILL; the others wait for its loss
//   wait              wait for a signal (the test stops the launcher, which passes it on)
// A rank that waits for a loss prints "rank R saw: DESCRIPTION". Errors go to stderr, exit 2.

#include "tandem/job.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int fail(const std::string& message) {
    std::fprintf(stderr, "job_probe: %s\n", message.c_str());
    return 2;
}

/// Waits for rank `lost`'s end and prints it.
int see_loss(const tandem::Job& job, std::uint32_t lost) {
    const std::optional<tandem::RankLoss> loss =
        job.wait_for_loss_of(lost, std::chrono::seconds(60));
    if (!loss) {
        return fail("rank " + std::to_string(job.rank()) + " never saw rank " +
                    std::to_string(lost) + " end");
    }
    std::printf("rank %u saw: %s\n", job.rank(), loss->describe().c_str());
    std::fflush(stdout);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    tandem::Result<tandem::Job> job = tandem::Job::join();
    if (!job) {
        return fail(job.error().report());
    }
    const auto& runtime = job->runtime();
    std::printf("rank %u of %u joined job %s in %s: %s, %zu devices\n", job->rank(),
                job->world_size(), job->job_id().c_str(), job->folder().c_str(),
                std::string(runtime->backend()).c_str(), runtime->device_count());
    std::fflush(stdout);
    if (mode == "check" && argc == 3) {
        const char* devices = std::getenv("TANDEM_DEVICES");
        const std::size_t expected_devices =
            devices != nullptr ? std::strtoul(devices, nullptr, 10) : 1;
        if (job->world_size() != std::strtoul(argv[2], nullptr, 10) ||
            runtime->device_count() != expected_devices) {
            return fail("unexpected world size or device count");
        }
        return 0;
    }
    if ((mode == "exit" && argc == 4) || (mode == "kill" && argc == 3)) {
        const auto chosen = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
        if (job->rank() != chosen) {
            return see_loss(*job, chosen);
        }
        if (mode == "kill") {
            ::raise(SIGKILL);
        }
        std::exit(std::atoi(argv[3]));  // The job is not left: its peers see an exit.
    }
    if (mode == "wait") {
        ::pause();
        return 0;
    }
    return fail("unknown arguments");
}
