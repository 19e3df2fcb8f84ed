// Host threads driving one runtime at once: each on a stream of one device, each on a device of
// its own, and an event handed from one thread to another. Every thread must see the outcomes
// the rules give its own program (C3, C6, C8, C9) whatever the others do meanwhile, and nothing
// may crash, hang or race (the tsan build runs these). A thread records what it saw wrong in its
// own list; the test reports the lists once every thread is joined.

#include "foreign.hpp"
#include "support.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <sstream>
#include <thread>

namespace tandem::conformance {
namespace {

template <typename Backend>
class Threads : public Conformance<Backend> {
protected:
    static constexpr int threads = 4;
    static constexpr int rounds = 40;

    /// One thread's program on `client`'s `stream`: each round fills one buffer, fails a second
    /// with the thread's code, copies the failed one into a third (C9: skipped), and reads all
    /// three back. Returns what it saw that the rules do not give, one line each.
    static std::vector<std::string> program(Client client, StreamId stream, int thread) {
        std::vector<std::string> wrong;
        const auto note = [&](int round, const std::string& what) {
            std::ostringstream line;
            line << "thread " << thread << " round " << round << ": " << what;
            wrong.push_back(line.str());
        };
        const std::uint32_t code = 100 + static_cast<std::uint32_t>(thread);
        for (int round = 0; round < rounds; ++round) {
            Result<Handle> good = client.allocate(64, stream);
            Result<Handle> bad = client.allocate(64, stream);
            Result<Handle> copied = client.allocate(64, stream);
            if (!good || !bad || !copied) {
                note(round, "an allocation failed");
                continue;
            }
            const auto value = static_cast<std::uint8_t>(thread * 16 + round);
            const bool enqueued = client.launch("fill", LaunchConfig::linear(64), {out(*good)},
                                                KernelArgs().u64(value), stream) &&
                                  client.launch("fail", LaunchConfig::linear(1), {out(*bad)},
                                                KernelArgs().u64(code), stream) &&
                                  client.launch("copy", LaunchConfig::linear(64),
                                                {in(*bad), out(*copied)}, KernelArgs(), stream);
            if (!enqueued) {
                note(round, "a launch was refused");
                continue;
            }
            Result<std::vector<std::byte>> read = client.read(*good);
            if (!read || *read != filled(64, value)) {
                note(round, read ? "the filled buffer read other bytes"
                                 : "the filled buffer failed: " + read.error().report());
            }
            for (const Handle* claimed : {&*bad, &*copied}) {
                std::optional<Error> error = Threads::read_error(client, *claimed);
                if (!error || root_code(*error) != code) {
                    note(round, error
                                    ? "a claimed buffer failed on another root: " + error->report()
                                    : "a claimed buffer read");
                }
            }
        }
        return wrong;
    }

    /// Runs `body(thread)` on `threads` threads at once and reports every line they return.
    template <typename Body>
    static void run_threads(Body body) {
        std::vector<std::future<std::vector<std::string>>> results;
        for (int thread = 0; thread < threads; ++thread) {
            results.push_back(std::async(std::launch::async, body, thread));
        }
        for (auto& result : results) {
            for (const std::string& line : result.get()) {
                ADD_FAILURE() << line;
            }
        }
    }
};
TYPED_TEST_SUITE(Threads, Backends, BackendNames);

TYPED_TEST(Threads, threads_on_streams_of_one_device_each_see_their_own_outcomes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    std::vector<StreamId> streams;
    for (int thread = 0; thread < TestFixture::threads; ++thread) {
        Result<StreamId> stream = client.create_stream();
        ASSERT_TRUE(stream) << stream.error().report();
        streams.push_back(*stream);
    }
    TestFixture::run_threads([&](int thread) {
        return TestFixture::program(client, streams[static_cast<std::size_t>(thread)], thread);
    });
    EXPECT_TRUE(client.sync());
}

// Threads sharing one stream: on CUDA their launches make their calls to the driver without the
// runtime's lock, and one stream must still take them in the order the runtime recorded them.
TYPED_TEST(Threads, threads_sharing_one_stream_each_see_their_own_outcomes) {
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    TestFixture::run_threads([&](int thread) {
        return TestFixture::program(client, client.default_stream(), thread);
    });
    EXPECT_TRUE(client.sync());
}

TYPED_TEST(Threads, threads_on_devices_of_their_own_each_see_their_own_outcomes) {
    TANDEM_RUNTIME(runtime, 2);
    const auto devices = static_cast<std::uint32_t>(runtime->device_count());
    TestFixture::run_threads([&](int thread) {
        Client client = runtime->client(static_cast<std::uint32_t>(thread) % devices);
        Result<StreamId> stream = client.create_stream();
        if (!stream) {
            return std::vector<std::string>{"thread " + std::to_string(thread) +
                                            ": create_stream failed"};
        }
        return TestFixture::program(client, *stream, thread);
    });
}

// A thread blocked waiting for an event behind a held-back stream leaves the runtime to the
// others: another thread's launch and read on another stream return while it still waits, where
// a backend waits apart from its lock at all.
TYPED_TEST(Threads, a_thread_waiting_for_held_back_work_does_not_hold_back_another_threads_read) {
    if (!TypeParam::waits_apart) {
        GTEST_SKIP() << "on " << TypeParam::name << " a wait runs the work it waits for";
    }
    TANDEM_RUNTIME(runtime, 1);
    Client client = runtime->client(0);
    Handle slow = this->allocate(client, 64);
    Handle quick = this->allocate(client, 64);
    this->fill(client, quick, 0);  // The kernel is loaded before the stream is held back.
    ASSERT_TRUE(client.sync());
    Result<StreamId> side = client.create_stream();
    ASSERT_TRUE(side) << side.error().report();
    Gate gate;  // Held back until the test opens it, not for a time assumed to outlast a read.
    ASSERT_TRUE(client.enqueue(ExternalWork{"gate", {}, gate.work()}, *side));
    this->fill(client, slow, 1, *side);
    Result<Event> behind = client.record_event(*side);
    ASSERT_TRUE(behind) << behind.error().report();
    std::atomic<bool> waited{false};
    std::thread waiter([&] {
        EXPECT_TRUE(client.wait(*behind));
        waited = true;
    });
    // Time for the waiter to be blocked in its wait (it stays there until the gate opens,
    // whether or not it got there first: nothing here depends on how long this is).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    this->fill(client, quick, 7);
    EXPECT_EQ(this->read_bytes(client, quick), filled(64, 7));
    EXPECT_FALSE(waited.load()) << "the held-back work ended before its gate opened";
    gate.open();
    waiter.join();
    EXPECT_EQ(this->read_bytes(client, slow), filled(64, 1));
}

// One thread fills and fails shared memory of device 0 and hands the event after it to a thread
// driving device 1, which waits for it and copies both into its own memory: the filled bytes
// arrive, and the copy of the failed ones is skipped with the owner's root (C9, P3).
TYPED_TEST(Threads, an_event_handed_to_another_thread_orders_its_peer_reads) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle filled_source = this->share(owner, this->allocate(owner, 64), peer);
    Handle failed_source = this->share(owner, this->allocate(owner, 64), peer);
    Handle filled_copy = this->allocate(peer, 64);
    Handle failed_copy = this->allocate(peer, 64);
    std::promise<Event> handed;
    std::future<Event> event = handed.get_future();
    std::thread producer([&] {
        this->fill(owner, filled_source, 9);
        this->fail(owner, failed_source, 44);
        Result<Event> recorded = owner.record_event(owner.default_stream());
        EXPECT_TRUE(recorded) << recorded.error().report();
        handed.set_value(recorded ? *recorded : Event{});
    });
    std::thread consumer([&] {
        const Event after = event.get();
        EXPECT_TRUE(peer.wait_event(peer.default_stream(), after));
        this->copy_kernel(peer, filled_source, filled_copy);
        this->copy_kernel(peer, failed_source, failed_copy);
        EXPECT_EQ(this->read_bytes(peer, filled_copy), filled(64, 9));
        std::optional<Error> error = this->read_error(peer, failed_copy);
        EXPECT_TRUE(error && root_code(*error) == 44u)
            << (error ? error->report() : std::string("the skipped copy read"));
    });
    producer.join();
    consumer.join();
}

// Devices that share nothing are locked apart: external work on device 0 that blocks until
// another thread has written and read device 1 lets that thread through. Where one lock served
// every device, the other thread would wait for the blocked work, which gives up after a while.
TYPED_TEST(Threads, work_blocked_on_one_device_leaves_a_device_sharing_nothing_with_it_to_others) {
    if (!TypeParam::locks_devices_apart) {
        GTEST_SKIP() << "on " << TypeParam::name << " every device is in one group";
    }
    TANDEM_RUNTIME(runtime, 2);
    Client first = runtime->client(0);
    Client second = runtime->client(1);
    Handle blocked_output = this->allocate(first, 64);
    Handle other = this->allocate(second, 64);
    std::promise<void> started;
    std::promise<void> other_done;
    std::future<void> done = other_done.get_future();
    bool other_went_through = false;
    ExternalWork work{"wait_for_the_other_device", {out(blocked_output)}, {}};
    // Called in the enqueue, holding device 0's group lock, on every backend.
    const auto block = [&] {
        started.set_value();
        other_went_through = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
        return Status{};
    };
    work.run.host = [&](HostKernelContext&) { return block(); };
    work.run.cuda = [&](const DeviceWorkContext&) { return block(); };
    std::thread other_thread([&, begun = started.get_future()]() mutable {
        begun.wait();  // Device 0's work holds its group's lock from here until it returns.
        this->fill(second, other, 5);
        EXPECT_EQ(this->read_bytes(second, other), filled(64, 5));
        other_done.set_value();
    });
    EXPECT_TRUE(first.enqueue(std::move(work)));
    other_thread.join();
    EXPECT_TRUE(other_went_through)
        << "device 1's write and read waited for work on device 0, with which it shares nothing";
}

// Two threads each drive a device of their own. Midway, the second copies memory the first shared
// (a copy needs no grant) while the first is busy, which joins the two devices' groups; then the
// first grants access and the second binds the memory in a kernel. Every outcome stays what the
// rules give, on both sides of the join (C3, C6, C9, P3).
TYPED_TEST(Threads, devices_joined_while_both_are_busy_keep_every_outcome) {
    TANDEM_RUNTIME(runtime, 2);
    Client owner = runtime->client(0);
    Client peer = runtime->client(1);
    Handle filled_owned = this->allocate(owner, 64);
    Handle failed_owned = this->allocate(owner, 64);
    this->fill(owner, filled_owned, 21);
    this->fail(owner, failed_owned, 61);
    // Nothing orders the peer's copy after the owner's fill but this sync (P6): without it the
    // copy may run first, on the simulator's threads, and read what was there before.
    ASSERT_TRUE(owner.sync());
    Result<Handle> filled_source = owner.share_with_peers(filled_owned);
    Result<Handle> failed_source = owner.share_with_peers(failed_owned);
    ASSERT_TRUE(filled_source && failed_source);
    Handle filled_copy = this->allocate(peer, 64);
    Handle failed_copy = this->allocate(peer, 64);
    std::promise<void> granted;
    std::thread owner_thread([&] {
        std::vector<std::string> wrong = TestFixture::program(owner, owner.default_stream(), 0);
        EXPECT_TRUE(owner.grant_peer_access(peer.service()));
        granted.set_value();
        for (const std::string& line : TestFixture::program(owner, owner.default_stream(), 1)) {
            wrong.push_back(line);
        }
        for (const std::string& line : wrong) {
            ADD_FAILURE() << "owner: " << line;
        }
    });
    std::thread peer_thread([&, grant = granted.get_future()] {
        std::vector<std::string> wrong = TestFixture::program(peer, peer.default_stream(), 2);
        EXPECT_TRUE(peer.copy(*filled_source, filled_copy));
        EXPECT_EQ(this->read_bytes(peer, filled_copy), filled(64, 21));
        grant.wait();
        this->copy_kernel(peer, *failed_source, failed_copy);
        std::optional<Error> error = this->read_error(peer, failed_copy);
        EXPECT_TRUE(error && root_code(*error) == 61u)
            << (error ? error->report() : std::string("the skipped copy read"));
        for (const std::string& line : TestFixture::program(peer, peer.default_stream(), 3)) {
            wrong.push_back(line);
        }
        for (const std::string& line : wrong) {
            ADD_FAILURE() << "peer: " << line;
        }
    });
    owner_thread.join();
    peer_thread.join();
    EXPECT_TRUE(runtime->sync_all());
}

}  // namespace
}  // namespace tandem::conformance
