#include "tandem/core/error.hpp"
#include "tandem/core/labels.hpp"
#include "tandem/core/result.hpp"

#include <cassert>
#include <exception>
#include <sstream>

namespace tandem {

struct Error::Payload {
    ErrorKind kind;
    std::string message;
    ErrorDetails details;
    std::shared_ptr<const Error> cause;
};

std::string_view to_string(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::OutOfMemory: return "OutOfMemory";
        case ErrorKind::InvalidArgument: return "InvalidArgument";
        case ErrorKind::WrongService: return "WrongService";
        case ErrorKind::LaunchRefused: return "LaunchRefused";
        case ErrorKind::KernelFailed: return "KernelFailed";
        case ErrorKind::Unwritten: return "Unwritten";
        case ErrorKind::Several: return "Several";
        case ErrorKind::DeviceLost: return "DeviceLost";
        case ErrorKind::PeerUnreachable: return "PeerUnreachable";
        case ErrorKind::TornDown: return "TornDown";
    }
    return "Unknown";
}

std::string_view advice(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::OutOfMemory:
            return "drop handles you no longer need or ask for less, then call `allocate` again";
        case ErrorKind::InvalidArgument: return "fix the call; retrying it fails the same way";
        case ErrorKind::WrongService:
            return "give the handle to the client of its own device "
                   "(`runtime->client(handle.service().device_index)`)";
        case ErrorKind::LaunchRefused:
            return "fix the kernel's name (`kernel_names()` lists them) or its launch "
                   "configuration";
        case ErrorKind::KernelFailed:
            return "handle the kernel's code, then launch the work again to write its outputs";
        case ErrorKind::Unwritten:
            return "fix or rerun the root failure, then write the bytes again (`Client::write`, "
                   "or a launch that writes them)";
        case ErrorKind::Several: return "handle each failure listed";
        case ErrorKind::DeviceLost:
            return "nothing more runs on this device: drop its runtime and open a new one "
                   "(`tandem::open_runtime`); on a GPU, one process per device (`tandem launch`) "
                   "keeps the others working";
        case ErrorKind::PeerUnreachable:
            return "grant the access (`Client::grant_peer_access`), or use devices that reach "
                   "each other; between ranks, see that the other side runs and takes part, or "
                   "give the call a longer timeout";
        case ErrorKind::TornDown: return "the work did not finish; enqueue it again";
    }
    return "";
}

namespace {

/// The advice for `error` itself: its kind's, but a device lost with its rank says what a job
/// does about a rank that is gone.
std::string advice_for(const Error& error) {
    if (const auto* lost = error.details_as<DeviceLostDetails>();
        lost != nullptr && lost->device.rank != ServiceId::no_rank) {
        return "rank " + std::to_string(lost->device.rank) +
               " is gone or its device is lost: its memory and its work are lost with it; go on "
               "without it (`Job::rank_alive`, `Job::on_rank_lost`) or start the job again "
               "(`tandem launch`)";
    }
    if (error.kind() == ErrorKind::PeerUnreachable &&
        error.details_as<PeerUnreachableDetails>() == nullptr) {
        // Devices that cannot reach each other carry their pair; a rank, a process or a
        // library that did not answer carries none, and a grant would not help it.
        return "check that the other side runs and takes part: every rank of the job started "
               "on this host, the same calls in the same order, the name published; or give "
               "the call a longer timeout";
    }
    return std::string(advice(error.kind()));
}

}  // namespace

Error::Error(ErrorKind kind, std::string message, ErrorDetails details)
    : payload_(std::make_shared<const Payload>(
          Payload{kind, std::move(message), std::move(details), nullptr})) {}

Error::Error(std::shared_ptr<const Payload> payload) : payload_(std::move(payload)) {}

Error Error::out_of_memory(std::string message, OutOfMemoryDetails details) {
    return Error(ErrorKind::OutOfMemory, std::move(message), details);
}

Error Error::invalid_argument(std::string message) {
    return Error(ErrorKind::InvalidArgument, std::move(message));
}

Error Error::wrong_service(ServiceId expected, ServiceId actual) {
    return Error(ErrorKind::WrongService,
                 "handle of " + to_string(actual) + " given to the client of " +
                     to_string(expected),
                 WrongServiceDetails{expected, actual});
}

Error Error::launch_refused(std::string kernel, std::string reason) {
    std::string message = "launch of '" + kernel + "' refused: " + reason;
    return Error(ErrorKind::LaunchRefused, std::move(message),
                 LaunchRefusedDetails{std::move(kernel)});
}

namespace {

/// How a report says a failure was injected: " (an injected fault: fault #2 injected into the
/// device)", or nothing for a kernel's own failure.
std::string injected_note(const KernelFailedDetails& details) {
    if (!details.injected) {
        return {};
    }
    if (details.fault_entry == 0) {
        return " (an injected fault)";
    }
    return " (an injected fault: fault #" + std::to_string(details.fault_entry) +
           " injected into the device)";
}

}  // namespace

Error Error::kernel_failed(KernelFailedDetails details) {
    std::string message = "kernel '" + details.kernel + "' failed with code " +
                          std::to_string(details.code) + injected_note(details) + " on " +
                          to_string(details.device) + ", " +
                          stream_name(details.device, details.stream);
    return Error(ErrorKind::KernelFailed, std::move(message), std::move(details));
}

Error Error::unwritten(UnwrittenDetails details) {
    assert(details.root && "an Unwritten error always names its root");
    std::string message = "read found bytes claimed by " + to_string(details.failure) +
                          " (carried by " + std::to_string(details.allocations) +
                          (details.allocations == 1 ? " allocation" : " allocations") +
                          "); root: " + details.root->message();
    return Error(ErrorKind::Unwritten, std::move(message), std::move(details));
}

Error Error::several(std::vector<Error> errors) {
    assert(!errors.empty());
    if (errors.size() == 1) {
        return std::move(errors.front());
    }
    std::string message = "read found " + std::to_string(errors.size()) + " distinct failures";
    return Error(ErrorKind::Several, std::move(message), SeveralDetails{std::move(errors)});
}

Error Error::device_lost(ServiceId device, std::string reason) {
    return Error(ErrorKind::DeviceLost, to_string(device) + " is lost: " + reason,
                 DeviceLostDetails{device});
}

Error Error::peer_unreachable(ServiceId from, ServiceId to, std::string reason) {
    return Error(ErrorKind::PeerUnreachable,
                 to_string(from) + " cannot reach " + to_string(to) + ": " + reason,
                 PeerUnreachableDetails{from, to});
}

Error Error::torn_down(std::string message) {
    return Error(ErrorKind::TornDown, std::move(message));
}

Error Error::thrown_by(std::string_view work) {
    std::string what = "an exception that is not a std::exception";
    try {
        throw;
    } catch (const std::exception& thrown) {
        what = thrown.what();
    } catch (...) {  // Not a std::exception: `what` says so already.
    }
    return torn_down(std::string(work) + " threw: " + what);
}

ErrorKind Error::kind() const { return payload_->kind; }
const std::string& Error::message() const { return payload_->message; }
const ErrorDetails& Error::details() const { return payload_->details; }
const Error* Error::cause() const { return payload_->cause.get(); }

Error Error::caused_by(Error cause) const {
    auto copy = std::make_shared<Payload>(*payload_);
    copy->cause = copy->cause
                      ? std::make_shared<const Error>(copy->cause->caused_by(std::move(cause)))
                      : std::make_shared<const Error>(std::move(cause));
    return Error(std::move(copy));
}

namespace {

void write_report(std::ostringstream& out, const Error& error, const std::string& indent);

void write_details(std::ostringstream& out, const Error& error, const std::string& indent) {
    if (const auto* oom = error.details_as<OutOfMemoryDetails>()) {
        out << indent << "  requested " << oom->requested_bytes << " bytes, free "
            << oom->free_bytes << ", reserved " << oom->reserved_bytes
            << ", largest free block " << oom->largest_free_block_bytes << "\n";
    } else if (const auto* unwritten = error.details_as<UnwrittenDetails>()) {
        for (const SkipRecord& hop : unwritten->chain) {
            // No memory is id 0: a hop that needed none was ordered after a wait that failed.
            out << indent << "  skipped '" << hop.kernel << "' on " << to_string(hop.device)
                << (hop.needed.memory.value == 0 ? std::string(": ordered after a wait that failed")
                                                 : ": needed " + to_string(hop.needed))
                << "\n";
        }
        if (unwritten->dropped_records > 0) {
            out << indent << "  (" << unwritten->dropped_records
                << " older skip records dropped)\n";
        }
        out << indent << "  root:\n";
        write_report(out, *unwritten->root, indent + "    ");
    } else if (const auto* several = error.details_as<SeveralDetails>()) {
        for (const Error& each : several->errors) {
            write_report(out, each, indent + "  ");
        }
    }
}

void write_report(std::ostringstream& out, const Error& error, const std::string& indent) {
    out << indent << to_string(error.kind()) << ": " << error.message() << "\n";
    write_details(out, error, indent);
    if (const Error* cause = error.cause()) {
        out << indent << "caused by:\n";
        write_report(out, *cause, indent + "  ");
    }
}

}  // namespace

std::string Error::report() const {
    std::ostringstream out;
    write_report(out, *this, "");
    out << "what to do: " << advice_for(*this) << "\n";
    return out.str();
}

namespace detail {

void throw_value_of_error(const Error& error) {
    throw BadResultAccess("Result::value() on an error: " + error.report());
}

void throw_error_of_success() { throw BadResultAccess("Result::error() on a successful result"); }

}  // namespace detail

}  // namespace tandem
