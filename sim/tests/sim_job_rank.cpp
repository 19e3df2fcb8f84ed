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
//   label NAME           the handle's label, as this rank's reports give it: "label 'L'"
//   publish NAME VALUE   allocates 64 bytes of its device filled with VALUE, grants rank 0's
//                        device 0 and publishes them as NAME, keeping its handle: "ok"
//   alloc NAME           allocates 64 bytes of its device and keeps them as NAME: "ok"
//   read NAME            reads the handle (running the work before it): "bytes B0 ... B7", or
//                        "error KIND: MESSAGE"
//   report NAME          reads the handle: "bytes ...", or "error " and the read error's whole
//                        report on one line (its lines joined by " | ")
//   copy-into NAME TARGET  enqueues a copy of handle NAME into handle TARGET, without waiting: "ok"
//   mark NAME            records an event on its default stream and keeps it as NAME (published to
//                        no one), for `complete`: "ok"
//   withdraw NAME        Job::withdraw: "ok", or "error KIND: MESSAGE"
//   record NAME          records an event on its default stream and publishes it as NAME: "ok"
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
//   broadcast ROOT VALUE eight bytes of VALUE, rank ROOT's over the job (Job::broadcast), then
//                        read: "bytes B0 ... B7", or "error KIND: MESSAGE"
//   broadcast-claimed ROOT C  the same with its bytes claimed by the fail kernel (code C)
//   allgather VALUE      eight bytes of VALUE gathered over the job (Job::all_gather) into 16,
//                        then read: "bytes B0 ... B15", or "error KIND: MESSAGE"
//   allgather-claimed C  the same with its input claimed by the fail kernel (code C)
//   reducescatter VALUE  the floats VALUE, VALUE+1, VALUE+2, VALUE+3, chunk 1 of their sum over
//                        the job (Job::reduce_scatter) read: "floats A B", or "error ..."
//   reducescatter-claimed C  the same with chunk 0 of its input (rank 0's) claimed (code C)
//   send RANK VALUE      eight bytes of VALUE sent to rank RANK (Job::send): "ok", or "error ..."
//   send-claimed RANK C  the same with its bytes claimed by the fail kernel (code C)
//   recv RANK            eight bytes received from rank RANK (Job::recv), then read:
//                        "bytes B0 ... B7", or "error KIND: MESSAGE"
//   lose-after N         arms the loss of its device after N more units of work: "ok"
//   die                  ends the process at once, without leaving the job
//   cut RANK             Job::cut_connection(RANK): "ok", or "error KIND: MESSAGE"
//   loss RANK            waits for the loss of RANK: "loss HOW CODE: SENTENCE" (HOW the
//                        RankEnd's name, SENTENCE `RankLoss::describe`), or "error ..."
//   alive RANK           Job::rank_alive(RANK): "true" or "false"
// The end of stdin leaves the job; a kill ends it without a word.

#include "tandem/job.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
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

/// `text` with its line ends replaced by " | ".
std::string one_line(std::string text) {
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at)) {
        text.replace(at, 1, " | ");
    }
    return text;
}

/// The answer for an error.
std::string error_text(const Error& error) { return "error " + first_line_of(error); }

/// A buffer of `device` holding `bytes`.
Handle written(Client& device, const std::vector<std::byte>& bytes) {
    Handle buffer = *device.allocate(bytes.size());
    (void)device.write(buffer, bytes);
    return buffer;
}

/// `count` floats from `first` on, `step` apart, as bytes.
std::vector<std::byte> float_bytes(float first, float step, std::size_t count) {
    std::vector<float> floats(count);
    for (std::size_t index = 0; index < count; ++index) {
        floats[index] = first + step * static_cast<float>(index);
    }
    std::vector<std::byte> bytes(count * sizeof(float));
    std::memcpy(bytes.data(), floats.data(), bytes.size());
    return bytes;
}

/// After `done`, `buffer` read as "bytes B0 B1 ..." (`as_floats`: "floats A B ..."), or why not.
std::string read_after(Client& device, const Status& done, const Handle& buffer, bool as_floats) {
    if (!done) {
        return error_text(done.error());
    }
    Result<std::vector<std::byte>> read = device.read(buffer);
    if (!read) {
        return error_text(read.error());
    }
    std::string text = as_floats ? "floats" : "bytes";
    for (std::size_t index = 0; index < read->size(); index += as_floats ? sizeof(float) : 1) {
        auto shown = static_cast<long long>((*read)[index]);
        if (as_floats) {
            float value = 0;
            std::memcpy(&value, read->data() + index, sizeof(float));
            shown = static_cast<long long>(value);
        }
        text += " " + std::to_string(shown);
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

/// The collective commands (`allreduce`, `broadcast`, `allgather`, `reducescatter`, `send`, each
/// also `-claimed`, and `recv`): the answer, or none for another command.
std::optional<std::string> collective(Job& job, Client& device, std::string command,
                                      const std::string& name, std::uint64_t value) {
    const bool claimed = command.ends_with("-claimed");
    command = command.substr(0, command.find('-'));
    const std::uint64_t first = std::strtoull(name.c_str(), nullptr, 10);
    // Claims the first `bytes` of `buffer` by the fail kernel when the command says so, with the
    // code its last word gives.
    const bool two_words = command == "broadcast" || command == "send";
    auto claim_if = [&](const Handle& buffer, std::uint64_t bytes) {
        if (claimed) {
            (void)device.launch("fail", LaunchConfig::linear(1),
                                {{*buffer.slice(0, bytes), AccessMode::Write}},
                                KernelArgs().u64(two_words ? value : first));
        }
        return buffer;
    };
    const auto base = static_cast<float>(first);
    if (command == "allreduce") {
        Handle buffer = claim_if(written(device, float_bytes(base, 0, 4)), 16);
        return read_after(device, job.all_reduce(buffer, ElementType::f32, ReduceOp::sum), buffer,
                          true);
    }
    if (command == "broadcast") {
        Handle buffer = claim_if(written(device, std::vector(8, std::byte(value & 0xff))), 8);
        return read_after(device, job.broadcast(buffer, static_cast<std::uint32_t>(first)), buffer,
                          false);
    }
    if (command == "send") {
        Handle source = claim_if(written(device, std::vector(8, std::byte(value & 0xff))), 8);
        const Status sent = job.send(static_cast<std::uint32_t>(first), source);
        return sent ? "ok" : error_text(sent.error());
    }
    if (command == "recv") {
        Handle target = written(device, std::vector<std::byte>(8));
        return read_after(device, job.recv(static_cast<std::uint32_t>(first), target), target,
                          false);
    }
    if (command == "allgather") {
        Handle input = claim_if(written(device, std::vector(8, std::byte(first & 0xff))), 8);
        Handle output = written(device, std::vector<std::byte>(8 * job.world_size()));
        return read_after(device, job.all_gather(input, output), output, false);
    }
    if (command == "reducescatter") {
        Handle input = claim_if(written(device, float_bytes(base, 1, 4)), 8);  // Rank 0's chunk.
        Handle output = written(device, std::vector<std::byte>(8));
        return read_after(device,
                          job.reduce_scatter(input, output, ElementType::f32, ReduceOp::sum),
                          output, true);
    }
    return std::nullopt;
}

/// `publish NAME VALUE`: "ok", or the first error; the buffer is kept in `handles`.
std::string publish_filled(Job& job, Client& device, const std::string& name, std::uint64_t value,
                           std::map<std::string, Handle>& handles) {
    Result<Handle> buffer = device.allocate(64);
    if (!buffer) {
        return "error " + first_line_of(buffer.error());
    }
    handles.insert_or_assign(name, *buffer);
    Status done = device.launch("fill", LaunchConfig::linear(64), {{*buffer, AccessMode::Write}},
                                KernelArgs().u64(value));
    if (done) {
        done = device.grant_peer_access(*job.service(0));
    }
    if (done) {
        done = job.publish(name, *buffer);
    }
    return done ? "ok" : "error " + first_line_of(done.error());
}

/// What the commands act on: the job, its device, and the handles and events kept by name.
struct Rank {
    Job& job;
    Client& device;
    std::map<std::string, Handle> handles;
    std::map<std::string, Event> events;
};

/// Keeps `found` as `name` in `kept` when it is there: "ok", or the error.
template <typename T>
std::string keep(std::map<std::string, T>& kept, const std::string& name, Result<T> found) {
    if (!found) {
        return error_text(found.error());
    }
    kept.insert_or_assign(name, *found);
    return "ok";
}

/// The event commands (`event`, `record`, `mark`, `withdraw`, `lookup-event`, `wait-event`,
/// `host-wait`, `complete`, `sync`): the answer, or none for another command.
std::optional<std::string> event_command(Rank& rank, const std::string& command,
                                         const std::string& name, std::uint64_t value) {
    Client& device = rank.device;
    if (command == "event") {
        return publish_event_after_fill(rank.job, device, name, value);
    }
    if (command == "record") {
        Result<Event> event = device.record_event(device.default_stream());
        return event ? answer_of(rank.job.publish(name, *event)) : error_text(event.error());
    }
    if (command == "mark") {
        return keep(rank.events, name, device.record_event(device.default_stream()));
    }
    if (command == "withdraw") {
        return answer_of(rank.job.withdraw(name));
    }
    if (command == "lookup-event") {
        return keep(rank.events, name, rank.job.lookup_event(name, std::chrono::seconds(60)));
    }
    if (command == "sync") {
        return answer_of(device.sync());
    }
    if (command != "wait-event" && command != "host-wait" && command != "complete") {
        return std::nullopt;
    }
    auto event = rank.events.find(name);
    if (event == rank.events.end()) {
        return "error no event named " + name;
    }
    if (command == "complete") {
        Result<bool> complete = device.event_complete(event->second);
        return !complete ? error_text(complete.error()) : (*complete ? "true" : "false");
    }
    return answer_of(command == "wait-event"
                         ? device.wait_event(device.default_stream(), event->second)
                         : device.wait(event->second));
}

/// The commands on a handle kept as `name` (`copy`, `kernel`, `fail`, `fill`, `read`,
/// `report`, `size`, `drop`, `copy-into`): the answer, or none for another command.
std::optional<std::string> handle_command(Rank& rank, const std::string& line,
                                          const std::string& command, const std::string& name,
                                          std::uint64_t value) {
    Client& device = rank.device;
    if (command == "copy-into") {
        std::string ignored;
        std::string target;
        std::istringstream(line) >> ignored >> ignored >> target;
        if (!rank.handles.contains(name) || !rank.handles.contains(target)) {
            return "error no handles named " + name + " and " + target;
        }
        return answer_of(device.copy(rank.handles.at(name), rank.handles.at(target)));
    }
    auto held = rank.handles.find(name);
    if (held == rank.handles.end()) {
        return "error no handle named " + name;
    }
    if (command == "copy" || command == "kernel") {
        return copy_and_read(device, held->second, command == "kernel");
    }
    if (command == "fail" || command == "fill") {
        return answer_of(device.launch(command, LaunchConfig::linear(1),
                                       {{held->second, AccessMode::Write}},
                                       KernelArgs().u64(value)));
    }
    if (command == "read") {
        return read_after(device, Status{}, *held->second.slice(0, 8), false);
    }
    if (command == "report") {
        Result<std::vector<std::byte>> bytes = device.read(held->second);
        return bytes ? read_after(device, Status{}, *held->second.slice(0, 8), false)
                     : "error " + one_line(bytes.error().report());
    }
    if (command == "size") {
        return "size " + std::to_string(held->second.size_in_use());
    }
    if (command == "label") {
        return "label '" + held->second.label() + "'";
    }
    if (command == "drop") {
        rank.handles.erase(held);
        return "ok";
    }
    return std::nullopt;
}

/// The name of `how`, as the `loss` command gives it.
std::string_view end_name(RankEnd how) {
    switch (how) {
        case RankEnd::left:
            return "left";
        case RankEnd::exited:
            return "exited";
        case RankEnd::killed:
            return "killed";
        case RankEnd::vanished:
            return "vanished";
        case RankEnd::abandoned:
            return "abandoned";
        case RankEnd::cut_off:
            return "cut_off";
        case RankEnd::this_rank_cut_off:
            return "this_rank_cut_off";
    }
    return "unknown";
}

/// The commands on the job's members (`cut`, `loss`, `alive`): the answer, or none for another
/// command.
std::optional<std::string> membership_command(Job& job, const std::string& command,
                                              const std::string& rank_text) {
    const auto rank = static_cast<std::uint32_t>(std::strtoul(rank_text.c_str(), nullptr, 10));
    if (command == "cut") {
        return answer_of(job.cut_connection(rank));
    }
    if (command == "alive") {
        return job.rank_alive(rank) ? "true" : "false";
    }
    if (command != "loss") {
        return std::nullopt;
    }
    const std::optional<RankLoss> loss = job.wait_for_loss_of(rank, std::chrono::seconds(60));
    return loss ? "loss " + std::string(end_name(loss->how)) + " " + std::to_string(loss->code) +
                      ": " + loss->describe()
                : "error rank " + rank_text + " is not lost";
}

/// The answer to one command line.
std::string answer_line(Rank& rank, const std::string& line) {
    std::istringstream words(line);
    std::string command;
    std::string name;
    std::uint64_t value = 0;
    words >> command >> name >> value;
    Client& device = rank.device;
    if (command == "lookup") {
        return keep(rank.handles, name, rank.job.lookup(name, std::chrono::seconds(60)));
    }
    if (command == "publish") {
        return publish_filled(rank.job, device, name, value, rank.handles);
    }
    if (command == "alloc") {
        return keep(rank.handles, name, device.allocate(64));
    }
    if (command == "lose" || command == "lose-after") {
        return answer_of(device.inject(DeviceLossFault{std::strtoull(name.c_str(), nullptr, 10)}));
    }
    if (command == "die") {
        std::_Exit(3);
    }
    if (command == "barrier") {
        return answer_of(rank.job.barrier());
    }
    if (std::optional<std::string> done = membership_command(rank.job, command, name)) {
        return *done;
    }
    if (std::optional<std::string> done = collective(rank.job, device, command, name, value)) {
        return *done;
    }
    if (std::optional<std::string> done = event_command(rank, command, name, value)) {
        return *done;
    }
    if (std::optional<std::string> done = handle_command(rank, line, command, name, value)) {
        return *done;
    }
    return "error unknown command " + command;
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
    Rank rank{*job, device, {}, {}};
    std::string line;
    while (std::getline(std::cin, line)) {
        std::cout << answer_line(rank, line) << std::endl;
    }
    return 0;
}
