// tandem_job_peers: what binding another process's memory costs on the simulator, beside the same
// work on memory a device of this process shares. This process is rank 0 of a job of two, with
// two simulated devices; a copy of it is rank 1, which publishes a small and a large buffer.
// Rank 0's device 0 then runs, alternating in each round, the same work on rank 1's memory and
// on its own device 1's shared memory:
//   launch   a one-thread copy kernel binding 256 bytes of the peer's memory, N launches + sync
//   read     the copy kernel reading the peer's large buffer (--large-mib, 256) into its own
//   lookup   looking the small buffer up again, its region mapped already (the handle dropped)
// Prints each round and the medians; the ratio is other process / this process.
//
//   tandem_job_peers [--rounds R] [--launches N] [--large-mib M]

#include "rank_one.hpp"

#include "tandem/job.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace tandem;

namespace {

using bench::check;
using bench::Clock;
using bench::seconds_since;

double read_once(Client& device, const Handle& source, const Handle& target) {
    const Clock::time_point start = Clock::now();
    check(device.launch("copy", LaunchConfig::linear(1024),
                        {{source, AccessMode::Read}, {target, AccessMode::Write}}),
          "read");
    check(device.sync(), "sync");
    return seconds_since(start);
}

struct Figures {
    std::vector<double> launch_remote, launch_local, read_remote, read_local, lookup;
};

void print_ratio(const char* what, const std::vector<double>& remote,
                 const std::vector<double>& local, double unit, const char* unit_name) {
    const double other = bench::median(remote);
    const double here = bench::median(local);
    std::printf("%-7s other process %10.2f %s, this process %10.2f %s, ratio %.3f\n", what,
                other * unit, unit_name, here * unit, unit_name, other / here);
}

/// What the command line asks for.
struct Arguments {
    int rounds = 7;
    int launches = 2000;
    std::uint64_t large_mib = 256;
};

Arguments parse(int argc, char** argv) {
    Arguments arguments;
    for (int index = 1; index + 1 < argc; index += 2) {
        const std::string flag = argv[index];
        if (flag == "--rounds") {
            arguments.rounds = std::max(1, std::atoi(argv[index + 1]));
        } else if (flag == "--launches") {
            arguments.launches = std::max(1, std::atoi(argv[index + 1]));
        } else if (flag == "--large-mib") {
            arguments.large_mib =
                std::max<std::uint64_t>(1, std::strtoull(argv[index + 1], nullptr, 10));
        }
    }
    // A simulated device holds 1 GiB: the large buffer, twice on one device, stays below it.
    arguments.large_mib = std::min<std::uint64_t>(arguments.large_mib, 512);
    return arguments;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--as-rank-one") == 0) {
        return bench::be_rank_one(std::strtoull(argv[2], nullptr, 10),
                                  LaunchConfig::linear(256));
    }
    const auto [rounds, launches, large_mib] = parse(argc, argv);
    const std::uint64_t large = large_mib << 20;
    const std::string id = new_job_id();
    const std::vector<std::string> sim = {"TANDEM_BACKEND=sim", "TANDEM_DEVICES=1"};
    const auto [pid, gate] =
        bench::start_rank_one(id, {"--as-rank-one", std::to_string(large)}, sim);
    JoinOptions options;
    options.environment = JobEnvironment{0, 2, 0, id, job_folder_path(id)};
    options.runtime.backend = "sim";
    options.runtime.devices = 2;
    Result<Job> job = Job::join(options);
    check(job ? Status{} : Status(job.error()), "join");
    char byte = 0;
    if (::read(gate, &byte, 1) != 1) {
        std::fprintf(stderr, "rank 1 did not publish\n");
        return 2;
    }
    Client device = job->runtime()->client(0);
    Client owner = job->runtime()->client(1);
    check(owner.grant_peer_access(device.service()), "grant");
    const Handle remote_small = *job->lookup("small");
    const Handle remote_large = *job->lookup("large");
    const LaunchConfig fill = LaunchConfig::linear(256);
    const Handle local_small = *owner.share_with_peers(bench::filled(owner, 256, 3, fill));
    const Handle local_large = *owner.share_with_peers(bench::filled(owner, large, 3, fill));
    const Handle small_out = bench::filled(device, 256, 3, fill);
    const Handle large_out = bench::filled(device, large, 3, fill);
    check(job->runtime()->sync_all(), "sync");  // The fills run now, not inside a round.
    Figures figures;
    for (int round = 0; round < rounds; ++round) {
        // Each first in every other round: neither gains from coming second.
        if (round % 2 == 0) {
            figures.launch_remote.push_back(
                bench::launch_batch(device, remote_small, small_out, launches));
            figures.launch_local.push_back(
                bench::launch_batch(device, local_small, small_out, launches));
        } else {
            figures.launch_local.push_back(
                bench::launch_batch(device, local_small, small_out, launches));
            figures.launch_remote.push_back(
                bench::launch_batch(device, remote_small, small_out, launches));
        }
        figures.read_remote.push_back(read_once(device, remote_large, large_out));
        figures.read_local.push_back(read_once(device, local_large, large_out));
        for (int lookup = 0; lookup < 50; ++lookup) {
            figures.lookup.push_back(bench::lookup_once(*job, "small"));
        }
        std::printf("round %d: launch %.2f / %.2f us, read %.1f / %.1f ms\n", round + 1,
                    figures.launch_remote.back() * 1e6, figures.launch_local.back() * 1e6,
                    figures.read_remote.back() * 1e3, figures.read_local.back() * 1e3);
    }
    print_ratio("launch", figures.launch_remote, figures.launch_local, 1e6, "us");
    print_ratio("read", figures.read_remote, figures.read_local, 1e3, "ms");
    std::printf("lookup  of a buffer whose region is mapped: median %.2f us over %zu\n",
                bench::median(figures.lookup) * 1e6, figures.lookup.size());
    check(job->barrier(std::chrono::minutes(1)), "barrier");
    ::waitpid(pid, nullptr, 0);
    return 0;
}
