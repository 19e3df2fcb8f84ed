// Jobs: ranks meet, see one another, notice a rank that ends and name how, and refuse what is
// not their job. Ranks run on threads of this process, or (for a rank that is killed or exits)
// in a process of their own. Every test ends with the job folder gone from /dev/shm.

#include "job_test_support.hpp"

#include "rank_link.hpp"
#include "wire.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <atomic>
#include <filesystem>
#include <future>

namespace tandem {
namespace {

using ::testing::HasSubstr;
using namespace tandem::testing;
namespace fs = std::filesystem;

TEST(Job, three_ranks_join_and_each_sees_its_rank_the_world_and_the_others_alive) {
    const std::string id = new_job_id();
    std::vector<Result<Job>> jobs = join_all(id, 3);
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
        ASSERT_TRUE(jobs[rank].ok()) << jobs[rank].error().report();
        EXPECT_EQ(jobs[rank]->rank(), rank);
        EXPECT_EQ(jobs[rank]->world_size(), 3u);
        EXPECT_EQ(jobs[rank]->job_id(), id);
        EXPECT_EQ(jobs[rank]->runtime(), nullptr);
        for (std::uint32_t other = 0; other < 3; ++other) {
            EXPECT_TRUE(jobs[rank]->rank_alive(other));
        }
        EXPECT_FALSE(jobs[rank]->rank_alive(3));
        EXPECT_TRUE(jobs[rank]->lost_ranks().empty());
    }
    // Only the seats and the lock are there once joined: every rank's socket is gone.
    EXPECT_FALSE(fs::exists(fs::path(job_folder_path(id)) / "rank-0.sock"));
    jobs.clear();
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_rank_that_leaves_is_reported_as_left_by_the_others) {
    const std::string id = new_job_id();
    std::vector<Result<Job>> jobs = join_all(id, 2);
    ASSERT_TRUE(jobs[0].ok() && jobs[1].ok());
    jobs[1]->leave();
    EXPECT_FALSE(jobs[1]->rank_alive(1));
    std::optional<RankLoss> loss = jobs[0]->wait_for_loss_of(1, guard_timeout);
    ASSERT_TRUE(loss.has_value());
    EXPECT_EQ(loss->rank, 1u);
    EXPECT_EQ(loss->how, RankEnd::left);
    EXPECT_FALSE(jobs[0]->rank_alive(1));
    EXPECT_THAT(loss->describe(), HasSubstr("rank 1 (pid"));
    EXPECT_THAT(loss->describe(), HasSubstr("left the job"));
    jobs.clear();
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_rank_killed_is_noticed_and_named_by_every_survivor) {
    const std::string id = new_job_id();
    // The test does not reap the killed rank before the survivors ask, so the system still shows
    // how it ended and the notice says "killed by signal 9".
    RankProcess victim = start_rank(rank_of(id, 2, 3), {"wait"});
    std::vector<std::future<Result<Job>>> joining;
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
        joining.push_back(
            std::async(std::launch::async, [&id, rank] { return join_as(rank_of(id, rank, 3)); }));
    }
    ASSERT_EQ(victim.first_line(), "joined");
    std::vector<Result<Job>> survivors;
    for (auto& future : joining) {
        survivors.push_back(future.get());
        ASSERT_TRUE(survivors.back().ok()) << survivors.back().error().report();
    }
    ASSERT_EQ(::kill(victim.pid, SIGKILL), 0);
    for (Result<Job>& survivor : survivors) {
        std::optional<RankLoss> loss = survivor->wait_for_loss_of(2, guard_timeout);
        ASSERT_TRUE(loss.has_value()) << "rank " << survivor->rank() << " never noticed";
        EXPECT_EQ(loss->rank, 2u);
        EXPECT_EQ(loss->how, RankEnd::killed);
        EXPECT_EQ(loss->code, SIGKILL);
        EXPECT_EQ(loss->pid, victim.pid);
        EXPECT_THAT(loss->describe(), HasSubstr("was killed by signal 9"));
        EXPECT_FALSE(survivor->rank_alive(2));
        EXPECT_TRUE(survivor->rank_alive(1 - survivor->rank()));
        EXPECT_EQ(survivor->lost_ranks().size(), 1u);
    }
    EXPECT_TRUE(WIFSIGNALED(victim.reap()));
    survivors.clear();
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

// The system closes a process's sockets only when no process holds them: a process the rank
// forked keeps its connections open after it is killed, and only its life word tells.
TEST(Job, a_rank_killed_while_a_process_it_forked_holds_its_connections_is_noticed) {
    const std::string id = new_job_id();
    RankProcess victim = start_rank(rank_of(id, 1, 2), {"fork"});
    std::future<Result<Job>> joining =
        std::async(std::launch::async, [&id] { return join_as(rank_of(id, 0, 2)); });
    ASSERT_EQ(victim.first_line(), "joined");
    const std::string holder_line = victim.first_line();
    ASSERT_THAT(holder_line, ::testing::StartsWith("holder "));
    const pid_t holder = std::stoi(holder_line.substr(7));
    Result<Job> survivor = joining.get();
    ASSERT_TRUE(survivor.ok()) << survivor.error().report();
    ASSERT_EQ(::kill(victim.pid, SIGKILL), 0);
    std::optional<RankLoss> loss = survivor->wait_for_loss_of(1, guard_timeout);
    // The holder is rank 1's child, not this process's: its end is read from a pidfd, so that
    // the job folder's lock it shares is let go before rank 0 leaves.
    const int holder_end = static_cast<int>(::syscall(SYS_pidfd_open, holder, 0));
    ::kill(holder, SIGKILL);
    if (holder_end >= 0) {
        pollfd ended{holder_end, POLLIN, 0};
        EXPECT_EQ(::poll(&ended, 1, static_cast<int>(guard_timeout.count())), 1);
        ::close(holder_end);
    }
    ASSERT_TRUE(loss.has_value()) << "rank 0 never noticed";
    EXPECT_EQ(loss->how, RankEnd::killed);
    EXPECT_EQ(loss->code, SIGKILL);
    EXPECT_THAT(loss->describe(), HasSubstr("was killed by signal 9"));
    EXPECT_FALSE(survivor->rank_alive(1));
    EXPECT_TRUE(WIFSIGNALED(victim.reap()));
    survivor->leave();
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

// A rank that runs another program without leaving ends its part: the system marks its life
// word as the program changes, so its peer reports it lost, never a connection lost while both
// ranks live (which would cut one of them off).
TEST(Job, a_rank_that_runs_another_program_without_leaving_is_reported_lost_not_cut_off) {
    const std::string id = new_job_id();
    RankProcess other = start_rank(rank_of(id, 1, 2), {"exec"});
    std::future<Result<Job>> joining =
        std::async(std::launch::async, [&id] { return join_as(rank_of(id, 0, 2)); });
    ASSERT_EQ(other.first_line(), "joined");
    Result<Job> survivor = joining.get();
    ASSERT_TRUE(survivor.ok()) << survivor.error().report();
    std::optional<RankLoss> loss = survivor->wait_for_loss_of(1, guard_timeout);
    ::kill(other.pid, SIGKILL);
    ASSERT_TRUE(loss.has_value()) << "rank 0 never noticed";
    EXPECT_EQ(loss->how, RankEnd::abandoned) << loss->describe();
    EXPECT_THAT(loss->describe(), HasSubstr("was abandoned"));
    EXPECT_TRUE(survivor->rank_alive(0));
    EXPECT_TRUE(survivor->lost_ranks().size() == 1);
    other.reap();
    survivor->leave();
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_rank_that_exits_without_leaving_is_reported_with_its_exit_code) {
    const std::string id = new_job_id();
    RankProcess quitter = start_rank(rank_of(id, 1, 2), {"exit", "3"});
    Result<Job> job = join_as(rank_of(id, 0, 2));
    ASSERT_TRUE(job.ok()) << job.error().report();
    std::optional<RankLoss> loss = job->wait_for_loss(guard_timeout);
    ASSERT_TRUE(loss.has_value());
    EXPECT_EQ(loss->rank, 1u);
    EXPECT_EQ(loss->how, RankEnd::exited);
    EXPECT_EQ(loss->code, 3);
    EXPECT_THAT(loss->describe(), HasSubstr("exited with code 3 without leaving the job"));
    EXPECT_EQ(quitter.first_line(), "joined");
    EXPECT_EQ(WEXITSTATUS(quitter.reap()), 3);
    job = Error::invalid_argument("left");
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, on_rank_lost_is_called_once_for_each_loss_before_and_after_it_is_registered) {
    const std::string id = new_job_id();
    std::vector<Result<Job>> jobs = join_all(id, 3);
    ASSERT_TRUE(jobs[0].ok() && jobs[1].ok() && jobs[2].ok());
    jobs[1]->leave();
    ASSERT_TRUE(jobs[0]->wait_for_loss_of(1, guard_timeout).has_value());
    std::mutex mutex;
    std::vector<std::uint32_t> heard;
    ASSERT_TRUE(jobs[0]->on_rank_lost([&](const RankLoss& loss) {
        std::lock_guard lock(mutex);
        heard.push_back(loss.rank);
    }));
    jobs[2]->leave();
    ASSERT_TRUE(jobs[0]->wait_for_loss_of(2, guard_timeout).has_value());
    jobs[0]->leave();  // The watcher has stopped: every callback has returned.
    EXPECT_EQ(heard, (std::vector<std::uint32_t>{1, 2}));
    jobs.clear();
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_join_that_times_out_names_the_ranks_that_never_came) {
    const std::string id = new_job_id();
    Result<Job> job = join_as(rank_of(id, 0, 3), std::chrono::milliseconds(50));
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind(), ErrorKind::PeerUnreachable);
    EXPECT_THAT(job.error().message(), HasSubstr("ranks 1 and 2 never came"));
    EXPECT_THAT(job.error().message(), HasSubstr("job '" + id + "'"));
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

// mpirun across hosts: the ranks of other hosts would never come to this host's folder, so the
// join is refused at once, saying what carries data between hosts, rather than after its wait.
TEST(Job, a_job_whose_launcher_put_ranks_on_other_hosts_is_refused_at_once) {
    const std::string id = new_job_id();
    JobEnvironment environment = rank_of(id, 0, 3);
    environment.launcher = JobLauncher::open_mpi;
    environment.host_ranks = 2;
    Result<Job> job = join_as(environment);  // Waits the guard's minute if not refused.
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(job.error().message(),
                HasSubstr("rank 0 is one of 2 of the job's 3 ranks on this host (so mpirun "
                          "says): a job's ranks meet in a folder of one host"));
    EXPECT_THAT(job.error().message(), HasSubstr("`tandem::mpi::Communicator`"));
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
    environment.host_ranks = 3;  // Every rank here: it joins as any job of one host.
    job = join_as(environment, std::chrono::milliseconds(50));
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind(), ErrorKind::PeerUnreachable) << job.error().report();
}

TEST(Job, ranks_joined_in_one_process_see_one_another_and_an_abandoned_one_as_lost) {
    JoinOptions options;
    options.open_runtime = false;
    options.timeout = guard_timeout;
    Result<std::vector<Job>> joined = Job::join_in_process(3, options);
    ASSERT_TRUE(joined.ok()) << joined.error().report();
    std::vector<Job> jobs = std::move(*joined);
    const std::string folder = jobs[0].folder();
    for (std::uint32_t rank = 0; rank < 3; ++rank) {
        EXPECT_EQ(jobs[rank].rank(), rank);
        EXPECT_EQ(jobs[rank].local_rank(), rank);
        EXPECT_EQ(jobs[rank].job_id(), jobs[0].job_id());
        EXPECT_TRUE(jobs[rank].rank_alive((rank + 1) % 3));
    }
    jobs[1].abandon();  // No goodbye: the others cannot tell it from a death, but how it ended.
    for (std::uint32_t rank : {0u, 2u}) {
        std::optional<RankLoss> loss = jobs[rank].wait_for_loss_of(1, guard_timeout);
        ASSERT_TRUE(loss.has_value());
        EXPECT_EQ(loss->how, RankEnd::abandoned);
        EXPECT_EQ(loss->pid, ::getpid());
        EXPECT_FALSE(jobs[rank].rank_alive(1));
    }
    jobs[1].leave();  // After `abandon`, nothing more to do.
    jobs[2].leave();
    EXPECT_EQ(jobs[0].wait_for_loss_of(2, guard_timeout)->how, RankEnd::left);
    jobs.clear();
    EXPECT_FALSE(fs::exists(folder));
}

TEST(Job, a_rank_taken_twice_is_refused_naming_the_holder_and_the_first_stays_in_the_job) {
    const std::string id = new_job_id();
    auto first = std::async(std::launch::async, [&id] { return join_as(rank_of(id, 0, 2)); });
    // The first rank 0 listens once it holds its seat.
    ASSERT_TRUE(wait_for_file(fs::path(job_folder_path(id)) / "rank-0.sock"));
    Result<Job> second = join_as(rank_of(id, 0, 2));
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(second.error().message(),
                HasSubstr("rank 0 of job '" + id + "' joined twice: another Job of this process " +
                          std::to_string(::getpid()) + " holds it already"));
    Result<Job> one = join_as(rank_of(id, 1, 2));
    Result<Job> zero = first.get();
    ASSERT_TRUE(one.ok()) << one.error().report();
    ASSERT_TRUE(zero.ok()) << zero.error().report();
    EXPECT_TRUE(zero->rank_alive(1));
    zero = Error::invalid_argument("left");
    one = Error::invalid_argument("left");
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_hello_of_another_job_id_is_refused_naming_both_jobs) {
    const std::string id = new_job_id();
    auto zero = std::async(std::launch::async, [&id] { return join_as(rank_of(id, 0, 2)); });
    ASSERT_TRUE(wait_for_file(fs::path(job_folder_path(id)) / "rank-0.sock"));
    JobEnvironment stranger = rank_of("another-job", 1, 2);
    stranger.job_folder = job_folder_path(id);
    Result<Job> refused = join_as(stranger);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(refused.error().message(),
                HasSubstr("the hello is for job 'another-job', but rank 0 is in job '" + id + "'"));
    // Rank 0 is still waiting for its rank 1, and takes the right one.
    Result<Job> one = join_as(rank_of(id, 1, 2));
    ASSERT_TRUE(one.ok()) << one.error().report();
    ASSERT_TRUE(zero.get().ok());
    one = Error::invalid_argument("left");
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_hello_of_another_world_size_is_refused) {
    const std::string id = new_job_id();
    auto zero = std::async(std::launch::async, [&id] { return join_as(rank_of(id, 0, 2)); });
    ASSERT_TRUE(wait_for_file(fs::path(job_folder_path(id)) / "rank-0.sock"));
    Result<Job> refused = join_as(rank_of(id, 1, 3), std::chrono::milliseconds(50));
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().message(),
                HasSubstr("the hello is for a job of 3 ranks, but job '" + id + "' has 2"));
    ASSERT_TRUE(join_as(rank_of(id, 1, 2)).ok());
    ASSERT_TRUE(zero.get().ok());
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

/// Connects to `socket` as a bare client and says hello as rank `rank` of a job of
/// `world_size`; the connection and the answer.
std::pair<int, job_detail::Frame> say_hello(const fs::path& socket, const std::string& id,
                                            std::uint32_t rank, std::uint32_t world_size) {
    Result<std::optional<int>> connected = job_detail::connect_to(socket.string());
    EXPECT_TRUE(connected.ok() && connected->has_value());
    const int descriptor = connected.ok() && connected->has_value() ? **connected : -1;
    EXPECT_TRUE(job_detail::send_frame(descriptor, job_detail::FrameKind::hello,
                                       job_detail::encode({rank, world_size, id}))
                    .ok());
    Result<job_detail::Frame> answer =
        job_detail::receive_frame(descriptor, std::chrono::steady_clock::now() + guard_timeout);
    EXPECT_TRUE(answer.ok()) << answer.error().report();
    return {descriptor, answer.ok() ? *answer : job_detail::Frame{}};
}

/// What a rank of this protocol says once it is connected: the runtime it opened (none here).
void say_runtime(int descriptor) {
    job_detail::WireWriter runtime;
    runtime.u64(0);
    runtime.u32(0);
    runtime.text("none");
    EXPECT_TRUE(
        job_detail::send_frame(descriptor, job_detail::FrameKind::runtime, runtime.take()).ok());
}

TEST(Job, a_second_hello_for_a_rank_already_connected_is_refused_naming_the_first) {
    const std::string id = new_job_id();
    auto zero = std::async(std::launch::async, [&id] { return join_as(rank_of(id, 0, 3)); });
    const fs::path socket = fs::path(job_folder_path(id)) / "rank-0.sock";
    ASSERT_TRUE(wait_for_file(socket));
    // Bare clients, without seats: the hello's own check is what refuses the second.
    const auto [first, welcome] = say_hello(socket, id, 2, 3);
    EXPECT_EQ(welcome.kind, job_detail::FrameKind::welcome);
    const auto [second, refusal] = say_hello(socket, id, 2, 3);
    EXPECT_EQ(refusal.kind, job_detail::FrameKind::refusal);
    EXPECT_THAT(refusal.payload,
                HasSubstr("rank 2 joined twice: rank 0 is connected to rank 2 (pid " +
                          std::to_string(::getpid()) + ") already"));
    ::close(second);
    const auto [one, welcome_one] = say_hello(socket, id, 1, 3);
    EXPECT_EQ(welcome_one.kind, job_detail::FrameKind::welcome);
    say_runtime(first);
    say_runtime(one);
    Result<Job> job = zero.get();
    ASSERT_TRUE(job.ok()) << job.error().report();
    EXPECT_TRUE(job->rank_alive(1) && job->rank_alive(2));
    ::close(first);
    ::close(one);
    ASSERT_TRUE(job->wait_for_loss_of(1, guard_timeout).has_value());
    ASSERT_TRUE(job->wait_for_loss_of(2, guard_timeout).has_value());
    job = Error::invalid_argument("left");
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_relative_job_folder_is_refused_before_anything_is_made) {
    JobEnvironment environment = rank_of(new_job_id(), 0, 1);
    environment.job_folder = "relative/folder";
    Result<Job> job = join_as(environment);
    ASSERT_FALSE(job.ok());
    EXPECT_THAT(job.error().message(), HasSubstr("the job folder is an absolute path"));
    EXPECT_FALSE(fs::exists("relative"));
}

/// Makes the folder of job `id` with `mode`, owned by `uid`.
fs::path make_folder(const std::string& id, mode_t mode, uid_t uid) {
    const fs::path folder = job_folder_path(id);
    EXPECT_EQ(::mkdir(folder.c_str(), mode), 0);
    EXPECT_EQ(::chmod(folder.c_str(), mode), 0);
    EXPECT_EQ(::chown(folder.c_str(), uid, static_cast<gid_t>(-1)), 0);
    return folder;
}

TEST(Job, a_job_folder_of_mode_0755_is_refused_and_left_as_it_was) {
    const std::string id = new_job_id();
    const fs::path folder = make_folder(id, 0755, ::geteuid());
    Result<Job> job = join_as(rank_of(id, 0, 1));
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(job.error().message(), HasSubstr("has mode 0755, not 0700"));
    struct stat status {};
    ASSERT_EQ(::stat(folder.c_str(), &status), 0);
    EXPECT_EQ(status.st_mode & 07777, 0755u);
    EXPECT_TRUE(fs::is_empty(folder));
    fs::remove(folder);
}

TEST(Job, a_job_folder_of_another_user_is_refused_and_left_as_it_was) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "making a folder of another user needs root";
    }
    const std::string id = new_job_id();
    const fs::path folder = make_folder(id, 0700, 65534);
    Result<Job> job = join_as(rank_of(id, 0, 1));
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(job.error().message(), HasSubstr("is owned by uid 65534, not by this user"));
    EXPECT_TRUE(fs::is_empty(folder));
    fs::remove(folder);
}

TEST(Job, a_symbolic_link_is_not_a_job_folder) {
    const std::string id = new_job_id();
    const fs::path target = job_folder_path(id + "-target");
    ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
    fs::create_directory_symlink(target, job_folder_path(id));
    Result<Job> job = join_as(rank_of(id, 0, 1));
    ASSERT_FALSE(job.ok());
    EXPECT_THAT(job.error().message(), HasSubstr("is not a directory"));
    EXPECT_TRUE(fs::is_empty(target));
    fs::remove(job_folder_path(id));
    fs::remove(target);
}

TEST(Job, a_connection_from_another_user_is_refused_naming_its_uid) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    const uid_t other = ::geteuid() + 1;
    Result<job_detail::PeerCredentials> peer = job_detail::check_peer_user(pair[0], other);
    ASSERT_FALSE(peer.ok());
    EXPECT_EQ(peer.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(peer.error().message(),
                HasSubstr("of uid " + std::to_string(::geteuid()) + ", not of this user (uid " +
                          std::to_string(other) + "): refused"));
    EXPECT_TRUE(job_detail::check_peer_user(pair[0], ::geteuid()).ok());
    ::close(pair[0]);
    ::close(pair[1]);
}

TEST(Job, another_user_cannot_reach_a_ranks_socket) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "becoming another user needs root";
    }
    const std::string id = new_job_id();
    auto zero = std::async(std::launch::async, [&id] { return join_as(rank_of(id, 0, 2)); });
    const fs::path socket = fs::path(job_folder_path(id)) / "rank-0.sock";
    ASSERT_TRUE(wait_for_file(socket));
    // The child becomes uid 65534 and tries the socket: the 0700 folder stops it before the
    // socket's own 0600 or the SO_PEERCRED check would. Only async-signal-safe calls after fork.
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
    const pid_t child = ::fork();
    if (child == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
            ::_exit(3);
        }
        const int descriptor = ::socket(AF_UNIX, SOCK_STREAM, 0);
        const int connected =
            ::connect(descriptor, reinterpret_cast<const sockaddr*>(&address), sizeof address);
        ::_exit(connected != 0 && errno == EACCES ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    ASSERT_TRUE(join_as(rank_of(id, 1, 2)).ok());
    ASSERT_TRUE(zero.get().ok());
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_rank_past_the_world_size_is_refused_before_anything_is_made) {
    const std::string id = new_job_id();
    Result<Job> job = join_as(rank_of(id, 2, 2));
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(job.error().message(), HasSubstr("rank 2 of a job of 2 ranks"));
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, a_runtime_that_cannot_be_opened_fails_the_join_before_any_rank_is_met) {
    const std::string id = new_job_id();
    JoinOptions options;
    options.environment = rank_of(id, 0, 2);  // Rank 1 never comes: meeting it would wait.
    options.runtime.backend = "simm";
    Result<Job> job = Job::join(options);
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(job.error().message(), HasSubstr("no backend is called that"));
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

TEST(Job, join_opens_this_ranks_runtime_with_the_devices_asked_for) {
    const std::string id = new_job_id();
    JoinOptions options;
    options.environment = rank_of(id, 0, 1);
    options.runtime.devices = 2;
    options.runtime.from_environment = false;
    Result<Job> job = Job::join(options);
    ASSERT_TRUE(job.ok()) << job.error().report();
    ASSERT_NE(job->runtime(), nullptr);
    EXPECT_EQ(job->runtime()->device_count(), 2u);
    job->leave();
    EXPECT_EQ(job->runtime(), nullptr);
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

// A backend that exports no memory (the reference backend) refuses to
// publish, saying so, and a rank without a runtime has nothing to publish or look up.
TEST(Job, a_backend_that_exports_no_memory_refuses_to_publish_and_a_lookup_says_so) {
    const std::string id = new_job_id();
    JoinOptions options;
    options.environment = rank_of(id, 0, 1);
    options.runtime.from_environment = false;
    options.runtime.backend = "reference";
    Result<Job> job = Job::join(options);
    ASSERT_TRUE(job.ok()) << job.error().report();
    Handle buffer = *job->runtime()->client(0).allocate(64);
    const Status published = job->publish("buffer", buffer);
    ASSERT_FALSE(published.ok());
    EXPECT_EQ(published.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(published.error().message(),
                HasSubstr("(reference) shares no memory with other processes"));
    Result<Handle> found = job->lookup("buffer", std::chrono::milliseconds(1));
    ASSERT_FALSE(found.ok());
    EXPECT_THAT(found.error().message(), HasSubstr("binds no memory of other processes"));
    Result<ServiceId> service = job->service(0, 1);  // A device this rank does not have.
    ASSERT_FALSE(service.ok());
    EXPECT_THAT(service.error().message(), HasSubstr("rank 0 has 1 devices; there is no device 1"));
    EXPECT_FALSE(job->service(1, 0).ok());  // A rank past the world size.
}

// Nor does it share events: publishing one is refused, saying so, and changes nothing.
TEST(Job, a_backend_that_shares_no_events_refuses_to_publish_one_and_a_lookup_says_so) {
    const std::string id = new_job_id();
    JoinOptions options;
    options.environment = rank_of(id, 0, 1);
    options.runtime.from_environment = false;
    options.runtime.backend = "reference";
    Result<Job> job = Job::join(options);
    ASSERT_TRUE(job.ok()) << job.error().report();
    Client device = job->runtime()->client(0);
    Result<Event> event = device.record_event(device.default_stream());
    ASSERT_TRUE(event.ok()) << event.error().report();
    const Status published = job->publish("event", *event);
    ASSERT_FALSE(published.ok());
    EXPECT_EQ(published.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(published.error().message(),
                HasSubstr("(reference) shares no events with other processes"));
    Result<Event> found = job->lookup_event("event", std::chrono::milliseconds(1));
    ASSERT_FALSE(found.ok());
    EXPECT_EQ(found.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(found.error().message(), HasSubstr("waits on no events of other processes"));
    EXPECT_TRUE(device.wait(*event).ok());  // The event is this rank's as before.
}

// The runtime each rank joins with names its devices by the rank, and a failure's report says
// so: the same words in every run.
TEST(Job, the_runtime_of_a_rank_names_its_devices_by_the_rank) {
    const std::string id = new_job_id();
    std::vector<std::future<Result<Job>>> joining;
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
        joining.push_back(std::async(std::launch::async, [&id, rank] {
            JoinOptions options;
            options.environment = rank_of(id, rank, 2);
            options.runtime.from_environment = false;
            options.runtime.backend = "reference";
            options.timeout = guard_timeout;
            return Job::join(options);
        }));
    }
    std::vector<Result<Job>> jobs;
    for (auto& future : joining) {
        jobs.push_back(future.get());
    }
    for (std::uint32_t rank = 0; rank < 2; ++rank) {
        ASSERT_TRUE(jobs[rank].ok()) << jobs[rank].error().report();
        Client client = jobs[rank]->runtime()->client(0);
        EXPECT_EQ(client.service().rank, rank);
        Result<Handle> handle = client.allocate(64);
        ASSERT_TRUE(handle.ok());
        (void)client.launch("fail", LaunchConfig::linear(1),
                            {LaunchArgument{*handle, AccessMode::Write, std::nullopt}},
                            KernelArgs().u64(5));
        Result<std::vector<std::byte>> read = client.read(*handle);
        ASSERT_FALSE(read.ok());
        // Both ranks run in this process here; a rank's device is named by its rank alone, as
        // when it has a process of its own.
        EXPECT_THAT(read.error().report(),
                    HasSubstr("on device 0 of rank " + std::to_string(rank) + ", stream 1"));
    }
    jobs.clear();
    EXPECT_FALSE(fs::exists(job_folder_path(id)));
}

}  // namespace
}  // namespace tandem
