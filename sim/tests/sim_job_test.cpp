// Peer memory across processes on the simulator: this test is rank 0 of a job of two, and rank 1
// is a process of its own (sim_job_rank, two_ranks.hpp). The collectives of a job are in
// sim_job_collective_test.cpp.

#include "two_ranks.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <future>
#include <random>

namespace tandem {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace tandem::testing;

// A label crosses with the memory: the rank that looks it up names it as its owner does, so a
// report on either rank says "memory #N of rank 0 'weights'"; unlabelled memory stays unnamed.
TEST_F(TwoRanks, a_published_allocations_label_names_it_on_the_other_rank_too) {
    Result<Handle> weights = device->allocate(64, {.label = "weights"});
    ASSERT_TRUE(weights.ok()) << weights.error().report();
    ASSERT_TRUE(job->publish("weights", *weights));
    ASSERT_TRUE(job->publish("plain", filled(3)));
    ASSERT_EQ(peer.ask("lookup weights"), "ok");
    ASSERT_EQ(peer.ask("lookup plain"), "ok");
    EXPECT_EQ(peer.ask("label weights"), "label 'weights'");
    EXPECT_EQ(peer.ask("label plain"), "label ''");
    // Looked up again while the first handle lives: the same name, no second entry.
    ASSERT_EQ(peer.ask("lookup weights"), "ok");
    EXPECT_EQ(peer.ask("label weights"), "label 'weights'");
}

TEST_F(TwoRanks, a_peer_copies_published_memory_and_its_kernels_bind_it_once_granted) {
    Handle data = filled(5);
    share_with_peer("data", data, /*granted=*/false);
    EXPECT_EQ(peer.ask("copy data"), "bytes 5 5 5 5 5 5 5 5");  // A copy needs no grant.
    // P7: a kernel of a device the owner never granted faults on every access.
    const std::string refused = peer.ask("kernel data");
    EXPECT_THAT(refused, StartsWith("error Unwritten"));
    EXPECT_THAT(refused, HasSubstr("never granted"));
    ASSERT_TRUE(device->grant_peer_access(*job->service(1)));
    EXPECT_EQ(peer.ask("kernel data"), "bytes 5 5 5 5 5 5 5 5");
}

TEST_F(TwoRanks, a_peer_reading_claimed_owner_bytes_gets_the_owners_report) {
    Handle data = filled(5);
    ASSERT_TRUE(fail(data, 9));
    share_with_peer("data", data);
    for (const char* how : {"copy data", "kernel data"}) {  // P3: skipped, never stale bytes.
        const std::string answer = peer.ask(how);
        EXPECT_THAT(answer, StartsWith("error Unwritten")) << how;
        // The root, named on the rank it came from (this process may number its runtime).
        EXPECT_THAT(answer, HasSubstr("kernel 'fail' failed with code 9 on device 0 of")) << how;
        EXPECT_THAT(answer, HasSubstr("rank 0, stream 1")) << how;
    }
}

TEST_F(TwoRanks, a_peers_failed_write_claims_the_owners_bytes_until_a_clean_write_lands) {
    Handle data = filled(5);
    share_with_peer("data", data);
    ASSERT_EQ(peer.ask("fail data 7"), "ok");
    barrier_with_peer();
    Result<std::vector<std::byte>> read = device->read(data);  // P4: claimed on the owner.
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(),
                HasSubstr("kernel 'fail' failed with code 7 on device 0 of rank 1"));
    ASSERT_EQ(peer.ask("fill data 3"), "ok");  // P5: a later clean write repairs it.
    barrier_with_peer();
    read = device->read(data);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{3});
    EXPECT_EQ((*read)[63], std::byte{3});
}

TEST_F(TwoRanks, a_published_slice_is_the_peers_handle_and_one_allocation_has_one_name) {
    Handle whole = filled(1);
    Handle tail = *whole.slice(32, 32);
    ASSERT_TRUE(device->launch("fill", LaunchConfig::linear(32), {{tail, AccessMode::Write}},
                               KernelArgs().u64(2)));
    ASSERT_TRUE(job->publish("tail", tail));
    ASSERT_EQ(peer.ask("lookup tail"), "ok");
    EXPECT_EQ(peer.ask("size tail"), "size 32");
    EXPECT_EQ(peer.ask("copy tail"), "bytes 2 2 2 2 2 2 2 2");
    Status again = job->publish("whole", whole);  // The board keeps one word an allocation.
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(again.error().message(), HasSubstr("is published already, as 'tail'"));
    ASSERT_EQ(peer.ask("publish theirs 4"), "ok");
    ASSERT_TRUE(job->lookup("theirs", guard_timeout).ok());
    Status taken = job->publish("theirs", filled(5));  // Names are the job's, not the rank's.
    ASSERT_FALSE(taken.ok());
    EXPECT_THAT(taken.error().message(), HasSubstr("'theirs' is published already, by rank 1"));
}

TEST_F(TwoRanks, a_lookup_of_a_name_nobody_published_fails_naming_it) {
    Result<Handle> found = job->lookup("nothing", std::chrono::milliseconds(20));
    ASSERT_FALSE(found.ok());
    EXPECT_EQ(found.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(found.error().message(), HasSubstr("no rank published 'nothing'"));
}

TEST_F(TwoRanks, bad_publications_are_refused_and_change_nothing) {
    Handle data = filled(5);
    ASSERT_TRUE(job->publish("data", data));
    Status twice = job->publish("data", filled(6));
    ASSERT_FALSE(twice.ok());
    EXPECT_THAT(twice.error().message(), HasSubstr("'data' is published already"));
    Status unnamed = job->publish("", data);
    ASSERT_FALSE(unnamed.ok());
    EXPECT_EQ(unnamed.error().kind(), ErrorKind::InvalidArgument);
    // A handle of another runtime of this process is not this rank's to publish.
    std::shared_ptr<Runtime> other = *open_runtime({.backend = "sim", .devices = 1});
    Status foreign = job->publish("foreign", *other->client(0).allocate(64));
    ASSERT_FALSE(foreign.ok());
    EXPECT_EQ(foreign.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(foreign.error().message(), HasSubstr("only memory of this rank's own devices"));
    Result<Handle> own = job->lookup("data", std::chrono::milliseconds(20));
    ASSERT_FALSE(own.ok());
    EXPECT_THAT(own.error().message(), HasSubstr("is this rank's own memory"));
    Status unknown = job->withdraw("never");
    ASSERT_FALSE(unknown.ok());
    EXPECT_THAT(unknown.error().message(), HasSubstr("'never' is not published by this rank"));
    ASSERT_EQ(peer.ask("lookup data"), "ok");  // The first publication stands.
    EXPECT_EQ(peer.ask("copy data"), "bytes 5 5 5 5 5 5 5 5");
}

TEST_F(TwoRanks, memory_a_killed_rank_published_is_lost_to_its_readers) {
    const std::optional<Handle> theirs = peers_memory("theirs", 4);
    ASSERT_TRUE(theirs);
    Handle mine = *device->allocate(64);
    ASSERT_TRUE(device->copy(*theirs, mine));
    Result<std::vector<std::byte>> read = device->read(mine);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{4});
    kill_peer();
    // D1: work reading the dead rank's memory is skipped with its loss, naming the rank.
    ASSERT_TRUE(device->copy(*theirs, mine));
    read = device->read(mine);
    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost"));
    EXPECT_THAT(read.error().report(), HasSubstr("device 0 of rank 1"));
    EXPECT_THAT(read.error().report(), HasSubstr("was killed by signal 9"));
}

TEST_F(TwoRanks, memory_of_a_device_lost_on_a_living_rank_reads_as_lost) {
    const std::optional<Handle> theirs = peers_memory("theirs", 4);
    ASSERT_TRUE(theirs);
    ASSERT_EQ(peer.ask("lose"), "ok");  // Answered once the loss is on its board.
    Handle mine = *device->allocate(64);
    ASSERT_TRUE(device->copy(*theirs, mine));
    Result<std::vector<std::byte>> read = device->read(mine);
    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost"));
    EXPECT_THAT(read.error().report(), HasSubstr("device 0 of rank 1"));
    EXPECT_TRUE(job->rank_alive(1));  // The rank lives on; only its device is lost.
}

TEST_F(TwoRanks, memory_looked_up_reads_as_lost_once_this_rank_left_the_job) {
    const std::optional<Handle> theirs = peers_memory("theirs", 4);
    ASSERT_TRUE(theirs);
    Client kept = *device;
    std::shared_ptr<Runtime> runtime = job->runtime();  // Kept past the job, as a program may.
    job->leave();
    Handle mine = *kept.allocate(64);
    ASSERT_TRUE(kept.copy(*theirs, mine));
    Result<std::vector<std::byte>> read = kept.read(mine);
    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost"));
    EXPECT_THAT(read.error().report(), HasSubstr("this rank left the job"));
}

TEST_F(TwoRanks, the_job_folder_and_the_boards_are_this_users_alone) {
    namespace fs = std::filesystem;
    const fs::path folder = job_folder_path(id_);
    EXPECT_EQ(fs::status(folder).permissions(), fs::perms::owner_all);
    for (const char* board : {"board-0", "board-1"}) {
        EXPECT_EQ(fs::status(folder / board).permissions(),
                  fs::perms::owner_read | fs::perms::owner_write)
            << board;
    }
}

TEST_F(TwoRanks, a_withdrawn_publication_is_unpinned_when_its_last_holder_dies) {
    const std::uint64_t before = device->memory_usage()->in_use_bytes;
    {
        Handle data = filled(5);
        share_with_peer("data", data, /*granted=*/false);
        ASSERT_TRUE(job->withdraw("data"));
    }
    // P2: the peer's handle pins it past the withdrawal and the owner's own handle.
    ASSERT_TRUE(device->sync());
    EXPECT_GT(device->memory_usage()->in_use_bytes, before);
    Result<Handle> again = job->lookup("data", std::chrono::milliseconds(20));
    ASSERT_FALSE(again.ok());
    kill_peer();
    ASSERT_TRUE(device->sync());
    EXPECT_EQ(device->memory_usage()->in_use_bytes, before);  // Its pin went with it.
}

// ---------------------------------------------------------------- events across ranks

TEST_F(TwoRanks, a_peers_launch_waiting_on_the_owners_event_sees_the_owners_write) {
    Handle data = filled(5);
    share_with_peer("data", data);  // Published as written so far: fives.
    ASSERT_TRUE(fill(data, 7));
    ASSERT_TRUE(event_for_peer("written"));
    ASSERT_EQ(peer.ask("wait-event written"), "ok");
    // This rank runs its work when it syncs: until then the event is not reached.
    EXPECT_EQ(peer.ask("complete written"), "false");
    // The peer's copy kernel is ordered after the fill: its read holds until this rank has run
    // the fill, and never sees the fives.
    auto copied = std::async(std::launch::async, [this] { return peer.ask("kernel data"); });
    ASSERT_TRUE(device->sync());
    EXPECT_EQ(copied.get(), "bytes 7 7 7 7 7 7 7 7");
    EXPECT_EQ(peer.ask("complete written"), "true");
}

TEST_F(TwoRanks, a_peers_write_ordered_after_the_owners_failed_write_by_its_event_repairs_it) {
    Handle data = filled(5);
    share_with_peer("data", data);
    ASSERT_TRUE(fail(data, 9));
    ASSERT_TRUE(event_for_peer("failed"));
    ASSERT_EQ(peer.ask("wait-event failed"), "ok");
    ASSERT_EQ(peer.ask("fill data 3"), "ok");  // Enqueued after the wait; runs after the failure.
    auto synced = std::async(std::launch::async, [this] { return peer.ask("sync"); });
    (void)device->sync();  // Runs the failing write: its claim is on the bytes first.
    EXPECT_EQ(synced.get(), "ok");
    // P5 across processes: the peer's write, later in program order by the event, landed after
    // the failure was claimed and released it.
    Result<std::vector<std::byte>> read = device->read(data);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{3});
    EXPECT_EQ((*read)[63], std::byte{3});
}

TEST_F(TwoRanks, a_wait_on_an_event_of_a_killed_rank_fails_naming_the_rank) {
    const std::optional<Event> gate = peers_gate();  // Its work waits for a sync that never comes.
    ASSERT_TRUE(gate);
    Result<bool> complete = device->event_complete(*gate);
    ASSERT_TRUE(complete.ok()) << complete.error().report();
    EXPECT_FALSE(*complete);
    Handle mine = *device->allocate(64);
    ASSERT_TRUE(device->wait_event(device->default_stream(), *gate));
    ASSERT_TRUE(fill(mine, 1));
    auto waited = std::async(std::launch::async, [this, &gate] { return device->wait(*gate); });
    kill_peer();
    const Status host = waited.get();  // Never a hang: the loss ends the wait.
    ASSERT_FALSE(host.ok());
    EXPECT_EQ(host.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(host.error().message(), HasSubstr("device 0 of rank 1"));
    EXPECT_THAT(host.error().report(), HasSubstr("was killed by signal 9"));
    // D1: the fill was ordered after work that will never run; it is skipped with the loss.
    Result<std::vector<std::byte>> read = device->read(mine);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(), HasSubstr("ordered after a wait that failed"));
    EXPECT_THAT(read.error().report(), HasSubstr("DeviceLost"));
    EXPECT_THAT(read.error().report(), HasSubstr("was killed by signal 9"));
    // A wait on an event of the lost rank is refused, and enqueues nothing: the stream's later
    // work runs.
    const StreamId fresh = *device->create_stream();
    const Status again = device->wait_event(fresh, *gate);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(again.error().message(), HasSubstr("device 0 of rank 1"));
    Handle other = *device->allocate(64, fresh);
    ASSERT_TRUE(device->launch("fill", LaunchConfig::linear(64), {{other, AccessMode::Write}},
                               KernelArgs().u64(2), fresh));
    Result<std::vector<std::byte>> clean = device->read(other);
    ASSERT_TRUE(clean.ok()) << clean.error().report();
    EXPECT_EQ((*clean)[0], std::byte{2});
}

TEST_F(TwoRanks, bad_event_publications_and_lookups_are_refused_and_change_nothing) {
    Result<Event> missing = job->lookup_event("nothing", std::chrono::milliseconds(20));
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(missing.error().message(), HasSubstr("no rank published an event 'nothing'"));
    Handle data = filled(5);
    Result<Event> done = device->record_event(device->default_stream());
    ASSERT_TRUE(done.ok());
    ASSERT_TRUE(job->publish("done", *done));
    Status twice = job->publish("done", *done);
    ASSERT_FALSE(twice.ok());
    EXPECT_EQ(twice.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(twice.error().message(), HasSubstr("'done' is published already, as an event"));
    ASSERT_TRUE(job->publish("data", data));
    Status memory_name = job->publish("data", *done);  // One namespace: memory's name is taken.
    ASSERT_FALSE(memory_name.ok());
    EXPECT_THAT(memory_name.error().message(), HasSubstr("'data' is published already"));
    Status unnamed = job->publish("", *done);
    ASSERT_FALSE(unnamed.ok());
    EXPECT_EQ(unnamed.error().kind(), ErrorKind::InvalidArgument);
    Status empty = job->publish("empty", Event{});
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(empty.error().message(), HasSubstr("only events this rank's own devices"));
    std::shared_ptr<Runtime> other = *open_runtime({.backend = "sim", .devices = 1});
    Client elsewhere = other->client(0);
    Status foreign = job->publish("foreign", *elsewhere.record_event(elsewhere.default_stream()));
    ASSERT_FALSE(foreign.ok());
    EXPECT_EQ(foreign.error().kind(), ErrorKind::InvalidArgument);
    Result<Event> own = job->lookup_event("done", std::chrono::milliseconds(20));
    ASSERT_FALSE(own.ok());
    EXPECT_THAT(own.error().message(), HasSubstr("is this rank's own event"));
    Result<Event> not_an_event = job->lookup_event("data", std::chrono::milliseconds(20));
    ASSERT_FALSE(not_an_event.ok());
    EXPECT_THAT(not_an_event.error().message(), HasSubstr("names memory, not an event"));
    EXPECT_EQ(peer.ask("lookup-event data"),
              "error InvalidArgument: 'data' names memory, not an event: look it up with `lookup`");
    // The first publication stands: the peer waits on it, done once this rank ran its work.
    ASSERT_EQ(peer.ask("lookup-event done"), "ok");
    ASSERT_TRUE(device->sync());
    EXPECT_EQ(peer.ask("host-wait done"), "ok");
    // An event of a device that is lost is published nowhere, and no peer waits on it any more.
    ASSERT_TRUE(device->inject(DeviceLossFault{0}));
    Status lost = job->publish("lost", *done);
    ASSERT_FALSE(lost.ok());
    EXPECT_EQ(lost.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(peer.ask("wait-event done"), StartsWith("error DeviceLost"));
    EXPECT_THAT(peer.ask("host-wait done"), StartsWith("error DeviceLost"));
}

TEST_F(TwoRanks, a_withdrawn_event_is_looked_up_no_more_and_keeps_its_meaning_for_its_holders) {
    Handle data = filled(7);  // Not run: this rank runs its work when it syncs.
    const std::optional<Event> written = event_for_peer("written");  // The peer holds it now.
    ASSERT_TRUE(written);
    ASSERT_TRUE(job->withdraw("written"));
    EXPECT_EQ(peer.ask("lookup-event written"),
              "error InvalidArgument: 'written' was withdrawn by rank 0");
    // The event the peer holds still means the work before it: not reached until this rank
    // runs the fill, reached once it has.
    EXPECT_EQ(peer.ask("complete written"), "false");
    ASSERT_TRUE(device->sync());
    EXPECT_EQ(peer.ask("complete written"), "true");
    EXPECT_EQ(peer.ask("host-wait written"), "ok");
    // Withdrawn once; the name stays the event's.
    Status again = job->withdraw("written");
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(again.error().message(), HasSubstr("'written' is not published by this rank"));
    Status reused = job->publish("written", *written);
    ASSERT_FALSE(reused.ok());
    EXPECT_THAT(reused.error().message(), HasSubstr("'written' is published already, as an event"));
    // An event a peer withdraws is refused here too, naming it and its rank.
    ASSERT_EQ(peer.ask("event theirs 4"), "ok");
    ASSERT_TRUE(job->lookup_event("theirs", guard_timeout).ok());
    ASSERT_EQ(peer.ask("withdraw theirs"), "ok");
    Result<Event> withdrawn = job->lookup_event("theirs", guard_timeout);
    ASSERT_FALSE(withdrawn.ok());
    EXPECT_EQ(withdrawn.error().kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(withdrawn.error().message(), HasSubstr("'theirs' was withdrawn by rank 1"));
}

/// Two ranks, this one waiting for the peer's events 50 ms at most.
class TwoRanksWaitingBriefly : public TwoRanks {
protected:
    TwoRanksWaitingBriefly() { event_wait_timeout = std::chrono::milliseconds(50); }
};

// The peer is the owner here, and holds its work back until the test opens the gate (`sync`):
// whatever this rank runs meanwhile, a read ordered after the peer's event never sees the bytes
// from before it. A stream wait that did not hold would copy the fives at once.
TEST_F(TwoRanksWaitingBriefly, a_stream_wait_holds_the_work_after_it_while_the_owner_is_held_back) {
    const std::optional<Handle> theirs = peers_memory("data", 5);  // Published as written: fives.
    ASSERT_TRUE(theirs);
    ASSERT_EQ(peer.ask("fill data 7"), "ok");  // Enqueued behind the gate, not run.
    ASSERT_EQ(peer.ask("record written"), "ok");
    Result<Event> written = job->lookup_event("written", guard_timeout);
    ASSERT_TRUE(written.ok()) << written.error().report();
    ASSERT_TRUE(device->wait_event(device->default_stream(), *written));
    Handle mine = *device->allocate(64);
    ASSERT_TRUE(device->copy(*theirs, mine));
    Result<Event> copied = device->record_event(device->default_stream());
    ASSERT_TRUE(copied.ok());
    Result<bool> done = device->event_complete(*copied);
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_FALSE(*done);
    // The read runs this rank's work: the wait holds for its whole limit, since the gate stays
    // shut, and the copy behind it is skipped with why; it never copies the fives. (A wait that
    // gave up at once would be skipped too, but sooner than its limit.)
    const auto reading = std::chrono::steady_clock::now();
    Result<std::vector<std::byte>> held = device->read(mine);
    EXPECT_GE(std::chrono::steady_clock::now() - reading, event_wait_timeout);
    ASSERT_FALSE(held.ok()) << "the copy ran before the owner's fill: " << int((*held)[0]);
    EXPECT_EQ(held.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(held.error().report(), HasSubstr("ordered after a wait that failed"));
    EXPECT_THAT(held.error().report(), HasSubstr("PeerUnreachable"));
    // The gate opens: the owner runs its fill, and a wait on its event now passes to the sevens.
    ASSERT_EQ(peer.ask("sync"), "ok");
    done = device->event_complete(*written);
    ASSERT_TRUE(done.ok()) << done.error().report();
    EXPECT_TRUE(*done);
    const StreamId fresh = *device->create_stream();
    ASSERT_TRUE(device->wait_event(fresh, *written));
    Handle after = *device->allocate(64, fresh);
    ASSERT_TRUE(device->copy(*theirs, after, fresh));
    Result<std::vector<std::byte>> read = device->read(after);
    ASSERT_TRUE(read.ok()) << read.error().report();
    EXPECT_EQ((*read)[0], std::byte{7});
    EXPECT_EQ((*read)[63], std::byte{7});
}

TEST_F(TwoRanksWaitingBriefly, a_wait_on_an_event_its_owner_never_reaches_ends_at_its_limit) {
    const std::optional<Event> gate = peers_gate();  // The gate is never opened.
    ASSERT_TRUE(gate);
    const Status host = device->wait(*gate);
    ASSERT_FALSE(host.ok());
    EXPECT_EQ(host.error().kind(), ErrorKind::PeerUnreachable);
    EXPECT_THAT(host.error().message(), HasSubstr("was not done within 50 ms"));
    Handle mine = *device->allocate(64);
    ASSERT_TRUE(device->wait_event(device->default_stream(), *gate));
    ASSERT_TRUE(fill(mine, 1));
    Result<std::vector<std::byte>> read = device->read(mine);  // Skipped, never stale.
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(), HasSubstr("ordered after a wait that failed"));
    EXPECT_THAT(read.error().report(), HasSubstr("PeerUnreachable"));
    EXPECT_TRUE(job->rank_alive(1));
}

// This rank's wait on the peer's event fails at its limit (the peer's gate stays shut); an event
// this rank records after it is reached, but a peer's stream waiting on it must follow the failed
// wait as a local stream would: its later work is skipped with that error, named on this rank.
TEST_F(TwoRanksWaitingBriefly,
       a_wait_on_an_event_recorded_after_a_failed_wait_passes_the_failure_on) {
    const std::optional<Event> gate = peers_gate();
    ASSERT_TRUE(gate);
    ASSERT_TRUE(device->wait_event(device->default_stream(), *gate));
    Result<Event> after = device->record_event(device->default_stream());
    ASSERT_TRUE(after.ok());
    ASSERT_TRUE(job->publish("after", *after));
    Result<Event> clean = device->record_event(*device->create_stream());  // Another stream's.
    ASSERT_TRUE(clean.ok());
    ASSERT_TRUE(job->publish("clean", *clean));
    (void)device->sync();  // The wait fails at its limit; the record follows it.
    // An event of a stream that followed no failed wait passes nothing on.
    ASSERT_EQ(peer.ask("alloc other"), "ok");
    ASSERT_EQ(peer.ask("lookup-event clean"), "ok");
    ASSERT_EQ(peer.ask("wait-event clean"), "ok");
    ASSERT_EQ(peer.ask("fill other 2"), "ok");
    EXPECT_EQ(peer.ask("read other"), "bytes 2 2 2 2 2 2 2 2");
    ASSERT_EQ(peer.ask("alloc mine"), "ok");
    ASSERT_EQ(peer.ask("lookup-event after"), "ok");
    EXPECT_EQ(peer.ask("complete after"), "true");  // Reached: this rank ran all before it.
    EXPECT_EQ(peer.ask("host-wait after"), "ok");   // A host wait is over, as for a local one.
    ASSERT_EQ(peer.ask("wait-event after"), "ok");
    ASSERT_EQ(peer.ask("fill mine 3"), "ok");
    const std::string skipped = peer.ask("report mine");
    EXPECT_THAT(skipped, StartsWith("error Unwritten"));
    EXPECT_THAT(skipped, HasSubstr("ordered after a wait that failed"));
    EXPECT_THAT(skipped, HasSubstr("event 1 of stream 1 of device 0 of "));
    EXPECT_THAT(skipped, HasSubstr("rank 0 was recorded after a wait that failed there"));
    // The cause crossed whole: this rank's wait on the peer's gate, which gave up.
    EXPECT_THAT(skipped, HasSubstr("PeerUnreachable"));
    EXPECT_THAT(skipped, HasSubstr("was not done within 50 ms"));
}

/// Two ranks whose simulators run each stream on a thread of its own (the peer takes the
/// scheduler from the environment): work runs as soon as it is enqueued, so a rank holds its
/// work back by a gate of its own, external work that ends when the test opens it.
class TwoRanksThreaded : public TwoRanks {
protected:
    TwoRanksThreaded() { scheduler = "threads"; }

    /// Enqueues on the default stream work that ends only once `opened` is.
    void enqueue_gate(std::shared_future<void> opened) {
        Handle scratch = *device->allocate(8);
        ExternalWork gate{"gate", {{scratch, AccessMode::Write}}, {}};
        gate.run.host = [opened](HostKernelContext&) {
            opened.wait();
            return Status{};
        };
        ASSERT_TRUE(device->enqueue(std::move(gate)));
    }
};

TEST_F(TwoRanksThreaded, a_peers_copy_waiting_on_the_owners_event_holds_until_the_owner_passes_it) {
    Handle data = filled(5);
    ASSERT_TRUE(device->sync());
    share_with_peer("data", data, /*granted=*/false);
    std::promise<void> gate;
    enqueue_gate(gate.get_future().share());
    ASSERT_TRUE(fill(data, 7));
    ASSERT_TRUE(event_for_peer("written"));
    ASSERT_EQ(peer.ask("alloc mine"), "ok");
    ASSERT_EQ(peer.ask("wait-event written"), "ok");
    ASSERT_EQ(peer.ask("copy-into data mine"), "ok");
    ASSERT_EQ(peer.ask("mark copied"), "ok");
    // The peer's worker runs its work at once; the gate holds this rank's fill, so the copy
    // behind the wait has not run, whenever the peer looks.
    EXPECT_EQ(peer.ask("complete copied"), "false");
    EXPECT_EQ(peer.ask("complete written"), "false");
    gate.set_value();
    EXPECT_EQ(peer.ask("read mine"), "bytes 7 7 7 7 7 7 7 7");  // Never the fives.
    EXPECT_EQ(peer.ask("complete copied"), "true");
    EXPECT_EQ(peer.ask("complete written"), "true");
}

// The peer lives on but never runs the work before its event: this rank's wait on it would hold
// for its whole limit (a minute here) if leaving the job did not end it.
TEST_F(TwoRanks, leaving_the_job_ends_a_stream_wait_on_a_living_idle_rank_at_once) {
    const std::optional<Event> gate = peers_gate();  // The gate is never opened.
    ASSERT_TRUE(gate);
    {
        Handle mine = *device->allocate(64);
        ASSERT_TRUE(device->wait_event(device->default_stream(), *gate));
        ASSERT_TRUE(fill(mine, 1));
    }
    const auto leaving = std::chrono::steady_clock::now();
    device.reset();
    job.reset();  // The job held the last of the runtime: its queued work drains as it goes.
    EXPECT_LT(std::chrono::steady_clock::now() - leaving, event_wait_timeout / 2);
    EXPECT_EQ(peer.ask("complete nothing"), "error no event named nothing");  // It answers.
}

TEST_F(TwoRanks, work_after_a_wait_that_leaving_the_job_ended_is_skipped_as_torn_down) {
    const std::optional<Event> gate = peers_gate();
    ASSERT_TRUE(gate);
    Client kept = *device;  // The runtime outlives the job, as a program may keep it.
    Handle mine = *kept.allocate(64);
    ASSERT_TRUE(kept.wait_event(kept.default_stream(), *gate));
    ASSERT_TRUE(kept.launch("fill", LaunchConfig::linear(64), {{mine, AccessMode::Write}},
                            KernelArgs().u64(1)));
    const auto leaving = std::chrono::steady_clock::now();
    job->leave();
    EXPECT_LT(std::chrono::steady_clock::now() - leaving, event_wait_timeout / 2);
    Result<std::vector<std::byte>> read = kept.read(mine);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind(), ErrorKind::Unwritten);
    EXPECT_THAT(read.error().report(), HasSubstr("ordered after a wait that failed"));
    EXPECT_THAT(read.error().report(), HasSubstr("TornDown"));
    EXPECT_THAT(read.error().report(), HasSubstr("left the job before event"));
    // A wait made after leaving finds the owner gone to this rank, as its memory is (D1).
    const Status after = kept.wait(*gate);
    ASSERT_FALSE(after.ok());
    EXPECT_EQ(after.error().kind(), ErrorKind::DeviceLost);
    EXPECT_THAT(after.error().report(), HasSubstr("this rank left the job"));
}

}  // namespace
}  // namespace tandem
