// A rank of a job on the simulator in a process of its own, driven by the job tests: it joins,
// writes "joined", then answers one command a line on stdin with one line on stdout.
//   lookup NAME          looks NAME up and keeps its handle: "ok", or "error KIND: MESSAGE"
//   copy NAME            copies the handle into a buffer of its own and reads it (no grant
//                        needed): "bytes B0 B1 ...", or "error KIND: MESSAGE" of the read
//   kernel NAME          the same through the catalog's copy kernel (needs the owner's grant)
//   fail NAME CODE       launches the catalog's fail kernel writing the handle: "ok"
//   fill NAME VALUE      launches the catalog's fill kernel writing the handle: "ok"
//   drop NAME            lets the handle go: "ok"
//   size NAME            the bytes the handle addresses: "size N"
//   publish NAME VALUE   allocates 64 bytes of its device filled with VALUE, grants rank 0's
//                        device 0 and publishes them as NAME: "ok"
//   barrier              Job::barrier: "ok", or "error KIND: MESSAGE"
//   lose                 loses its device at once (an injected loss, D1): "ok"
//   allreduce VALUE      four floats of VALUE, summed over the job (Job::all_reduce), then
//                        read: "floats A B C D", or "error KIND: MESSAGE"
//   allreduce-claimed C  the same with its four floats claimed by the fail kernel (code C)
//   event NAME VALUE     allocates 64 bytes, fills them with VALUE, records an event after the
//                        fill and publishes it as NAME: "ok". The rank runs its work only when
//                        it syncs or waits (the gate a test opens with `sync`)
//   lookup-event NAME    Job::lookup_event, keeping the event: "ok", or "error KIND: MESSAGE"
//   wait-event NAME      orders its default stream's later work after the event: "ok", or the
//                        error
//   host-wait NAME       waits for the event on the host (Client::wait): "ok", or the error
//   complete NAME        whether the event is complete, without waiting (Client::event_complete):
//                        "true", "false", or the error
//   sync                 runs and settles its device's work (Client::sync): "ok", or the error
//   die                  ends the process at once, without leaving the job
// The end of stdin leaves the job; a kill ends it without a word.

#include "tandem/job.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

using namespace tandem;

namespace {

std::string first_line_of(const Error& error) {
    std::string text = std::string(to_string(error.kind())) + ": " + error.message();
    return text.substr(0, text.find('\n'));
}

/// Copies `source` into a new buffer of `device` (by the copy kernel when `by_kernel`), then reads
/// it: the bytes, or the read's error.
std::string copy_and_read(Client& device, const Handle& source, bool by_kernel) {
    Result<Handle> target = device.allocate(source.size_in_use());
    if (!target) {
        return "error " + first_line_of(target.error());
    }
    const Status copied =
        by_kernel ? device.launch("copy", LaunchConfig::linear(64),
                                  {{source, AccessMode::Read}, {*target, AccessMode::Write}})
                  : device.copy(source, *target);
    if (!copied) {
        return "error " + first_line_of(copied.error());
    }
    Result<std::vector<std::byte>> bytes = device.read(*target);
    if (!bytes) {
        return "error " + first_line_of(bytes.error());
    }
    std::string text = "bytes";
    for (std::size_t index = 0; index < bytes->size() && index < 8; ++index) {
        text += " " + std::to_string(static_cast<unsigned>((*bytes)[index]));
    }
    return text;
}

/// `allreduce VALUE` and `allreduce-claimed CODE`: the buffer read after the sum, or why not.
std::string all_reduce_filled(Job& job, Client& device, std::uint64_t value, bool claimed) {
    Handle buffer = *device.allocate(16);
    std::vector<float> floats(4, static_cast<float>(value));
    std::vector<std::byte> bytes(16);
    std::memcpy(bytes.data(), floats.data(), bytes.size());
    (void)device.write(buffer, bytes);
    if (claimed) {
        (void)device.launch("fail", LaunchConfig::linear(1), {{buffer, AccessMode::Write}},
                            KernelArgs().u64(value));
    }
    if (Status reduced = job.all_reduce(buffer, ElementType::f32, ReduceOp::sum); !reduced) {
        return "error " + first_line_of(reduced.error());
    }
    Result<std::vector<std::byte>> read = device.read(buffer);
    if (!read) {
        return "error " + first_line_of(read.error());
    }
    std::memcpy(floats.data(), read->data(), read->size());
    std::string text = "floats";
    for (float each : floats) {
        text += " " + std::to_string(static_cast<long long>(each));
    }
    return text;
}

/// `event NAME VALUE`: "ok", or the first error.
std::string publish_event_after_fill(Job& job, Client& device, const std::string& name,
                                     std::uint64_t value) {
    Result<Handle> buffer = device.allocate(64);
    if (!buffer) {
        return "error " + first_line_of(buffer.error());
    }
    if (Status filled = device.launch("fill", LaunchConfig::linear(64),
                                      {{*buffer, AccessMode::Write}}, KernelArgs().u64(value));
        !filled) {
        return "error " + first_line_of(filled.error());
    }
    Result<Event> event = device.record_event(device.default_stream());
    if (!event) {
        return "error " + first_line_of(event.error());
    }
    const Status published = job.publish(name, *event);
    return published ? "ok" : "error " + first_line_of(published.error());
}

/// The answer of a command that returns a status.
std::string answer_of(const Status& status) {
    return status ? "ok" : "error " + first_line_of(status.error());
}

/// `publish NAME VALUE`: "ok", or the first error.
std::string publish_filled(Job& job, Client& device, const std::string& name,
                           std::uint64_t value) {
    Result<Handle> buffer = device.allocate(64);
    if (!buffer) {
        return "error " + first_line_of(buffer.error());
    }
    Status done = device.launch("fill", LaunchConfig::linear(64),
                                {{*buffer, AccessMode::Write}}, KernelArgs().u64(value));
    if (done) {
        done = device.grant_peer_access(*job.service(0));
    }
    if (done) {
        done = job.publish(name, *buffer);
    }
    return done ? "ok" : "error " + first_line_of(done.error());
}

}  // namespace

int main() {
    Result<Job> job = Job::join();
    if (!job) {
        std::fprintf(stderr, "%s", job.error().report().c_str());
        return 2;
    }
    std::cout << "joined" << std::endl;
    Client device = job->runtime()->client(0);
    std::map<std::string, Handle> handles;
    std::map<std::string, Event> events;
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream words(line);
        std::string command;
        std::string name;
        std::uint64_t value = 0;
        words >> command >> name >> value;
        std::string answer = "ok";
        auto held = handles.find(name);
        if (command == "lookup") {
            Result<Handle> found = job->lookup(name, std::chrono::seconds(60));
            answer = found ? "ok" : "error " + first_line_of(found.error());
            if (found) {
                handles.insert_or_assign(name, *found);
            }
        } else if (command == "publish") {
            answer = publish_filled(*job, device, name, value);
        } else if (command == "lose") {
            const Status injected = device.inject(DeviceLossFault{0});
            answer = injected ? "ok" : "error " + first_line_of(injected.error());
        } else if (command == "allreduce" || command == "allreduce-claimed") {
            value = std::strtoull(name.c_str(), nullptr, 10);
            answer = all_reduce_filled(*job, device, value, command == "allreduce-claimed");
        } else if (command == "event") {
            answer = publish_event_after_fill(*job, device, name, value);
        } else if (command == "lookup-event") {
            Result<Event> found = job->lookup_event(name, std::chrono::seconds(60));
            answer = found ? "ok" : "error " + first_line_of(found.error());
            if (found) {
                events.insert_or_assign(name, *found);
            }
        } else if (command == "wait-event" || command == "host-wait") {
            auto event = events.find(name);
            answer = event == events.end()
                         ? "error no event named " + name
                         : answer_of(command == "wait-event"
                                         ? device.wait_event(device.default_stream(), event->second)
                                         : device.wait(event->second));
        } else if (command == "complete") {
            auto event = events.find(name);
            Result<bool> complete = event == events.end()
                                        ? Result<bool>(Error::invalid_argument("no such event"))
                                        : device.event_complete(event->second);
            answer = !complete ? "error " + first_line_of(complete.error())
                               : (*complete ? "true" : "false");
        } else if (command == "sync") {
            answer = answer_of(device.sync());
        } else if (command == "die") {
            std::_Exit(3);
        } else if (command == "barrier") {
            const Status passed = job->barrier();
            answer = passed ? "ok" : "error " + first_line_of(passed.error());
        } else if (held == handles.end()) {
            answer = "error no handle named " + name;
        } else if (command == "copy" || command == "kernel") {
            answer = copy_and_read(device, held->second, command == "kernel");
        } else if (command == "fail" || command == "fill") {
            const Status launched = device.launch(command, LaunchConfig::linear(1),
                                                  {{held->second, AccessMode::Write}},
                                                  KernelArgs().u64(value));
            answer = launched ? "ok" : "error " + first_line_of(launched.error());
        } else if (command == "size") {
            answer = "size " + std::to_string(held->second.size_in_use());
        } else if (command == "drop") {
            handles.erase(held);
        } else {
            answer = "error unknown command " + command;
        }
        std::cout << answer << std::endl;
    }
    return 0;
}
