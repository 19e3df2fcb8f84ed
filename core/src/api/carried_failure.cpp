#include "api/carried_failure.hpp"

#include "job/error_codec.hpp"
#include "job/wire.hpp"

#include <memory>
#include <optional>
#include <utility>

namespace tandem::detail {
namespace {

/// `failure` as the report of `produced`, which work `name` on `device` would have written from
/// the failure's source: the hop comes first, before the hops the failure took already.
Error as_hop(const CarriedFailure& failure, const char* name, ServiceId device,
             const ClaimKey& produced) {
    SkipRecord hop{name, device, failure.source, {produced}};
    if (const auto* carried = failure.error.details_as<UnwrittenDetails>();
        carried != nullptr && carried->root != nullptr) {
        UnwrittenDetails details = *carried;
        details.chain.insert(details.chain.begin(), std::move(hop));
        return Error::unwritten(std::move(details));
    }
    UnwrittenDetails details;
    details.allocations = 1;
    details.chain = {std::move(hop)};
    details.root = std::make_shared<const Error>(failure.error);
    return Error::unwritten(std::move(details));
}

}  // namespace

std::string encode_failure(const Status& read, const ClaimKey& source) {
    job_detail::WireWriter out;
    out.key(source);
    out.rest(job_detail::encode(read ? Error::torn_down("no failure to carry") : read.error()));
    return out.take();
}

CarriedFailure decode_failure(std::string_view bytes, int from) {
    job_detail::WireReader in(bytes);
    const ClaimKey source = in.key();
    std::optional<Error> error = in.ok() ? job_detail::decode_error(in.rest()) : std::nullopt;
    return CarriedFailure{
        error ? std::move(*error)
              : Error::torn_down("rank " + std::to_string(from) + "'s failure arrived unreadable"),
        source};
}

Status claim_with(Client& device, const Handle& destination, const CarriedFailure& failure,
                  const char* name) {
    const Error claim = as_hop(failure, name, device.service(), destination.claim_key());
    ExternalCallables fails;
    fails.host = [claim](HostKernelContext&) -> Status { return claim; };
    fails.cuda = [claim](const DeviceWorkContext&) -> Status { return claim; };
    return device.enqueue(ExternalWork{name, {{destination, AccessMode::Write}}, std::move(fails)});
}

}  // namespace tandem::detail
