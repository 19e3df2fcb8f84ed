// The collectives of one runtime, each a few steps of `CollectiveSteps` (collectives.hpp says
// why they are built of the contract's own work, collective_steps.hpp how).

#include "tandem/core/collectives.hpp"

#include "api/collective_steps.hpp"

#include <array>
#include <string>

namespace tandem {

using detail::BufferList;
using detail::CollectiveSteps;

std::uint64_t element_size(ElementType type) {
    switch (type) {
        case ElementType::f64:
        case ElementType::i64:
            return 8;
        case ElementType::f32:
        case ElementType::i32:
            return 4;
        case ElementType::bf16:
            return 2;
    }
    return 1;  // No such type: every size is whole bytes, and the combine leaves them as they are.
}

// The first device folds every other device's buffer into its own, then copies the result to
// each: a claimed byte anywhere skips a fold, so the first device's buffer is claimed, so every
// copy of it is.
Status all_reduce(std::span<Client> devices, std::span<const Handle> buffers, ElementType type,
                  ReduceOp op) {
    const std::array lists{BufferList{"buffer", buffers, detail::first_size(buffers)}};
    if (Status valid = detail::check_collective("all-reduce", devices, lists, element_size(type));
        !valid) {
        return valid;
    }
    CollectiveSteps steps(devices);
    steps.join_each(buffers);
    for (std::size_t index = 1; index < devices.size(); ++index) {
        steps.fold(index, buffers[index], 0, buffers[0], type, op);
    }
    for (std::size_t index = 1; index < devices.size(); ++index) {
        steps.move(0, buffers[0], index, buffers[index]);
    }
    return steps.finish();
}

Status broadcast(std::span<Client> devices, std::span<const Handle> buffers, std::size_t root) {
    const std::array lists{BufferList{"buffer", buffers, detail::first_size(buffers)}};
    if (Status valid = detail::check_collective("broadcast", devices, lists, 1); !valid) {
        return valid;
    }
    if (root >= devices.size()) {
        return Error::invalid_argument("broadcast: root " + std::to_string(root) +
                                       " is not the index of one of its " +
                                       std::to_string(devices.size()) + " devices");
    }
    CollectiveSteps steps(devices);
    steps.join_each(buffers);
    for (std::size_t index = 0; index < devices.size(); ++index) {
        if (index != root) {
            steps.move(root, buffers[root], index, buffers[index]);
        }
    }
    return steps.finish();
}

// The inputs are gathered into one staging buffer of the first device, which every output then
// copies whole: a claimed byte of any input claims a chunk of it, so every copy of it is skipped.
Status all_gather(std::span<Client> devices, std::span<const Handle> inputs,
                  std::span<const Handle> outputs) {
    const std::uint64_t chunk = detail::first_size(inputs);
    const std::array lists{BufferList{"input", inputs, chunk},
                           BufferList{"output", outputs, detail::times(chunk, devices.size())}};
    if (Status valid = detail::check_collective("all-gather", devices, lists, 1); !valid) {
        return valid;
    }
    CollectiveSteps steps(devices);
    steps.join_each(inputs);
    steps.join_each(outputs);
    if (std::optional<Handle> gathered = steps.stage(0, outputs[0].size_in_use())) {
        for (std::size_t index = 0; index < devices.size(); ++index) {
            steps.move(index, inputs[index], 0, *gathered->slice(index * chunk, chunk));
        }
        for (std::size_t index = 0; index < devices.size(); ++index) {
            steps.move(0, *gathered, index, outputs[index]);
        }
    }
    return steps.finish();
}

// The inputs are folded into one staging buffer of the first device, whose chunk i device i
// copies: a claimed byte of any input skips a fold, so all of the staging buffer is claimed.
Status reduce_scatter(std::span<Client> devices, std::span<const Handle> inputs,
                      std::span<const Handle> outputs, ElementType type, ReduceOp op) {
    const std::uint64_t chunk = detail::first_size(outputs);
    const std::array lists{BufferList{"input", inputs, detail::times(chunk, devices.size())},
                           BufferList{"output", outputs, chunk}};
    if (Status valid =
            detail::check_collective("reduce-scatter", devices, lists, element_size(type));
        !valid) {
        return valid;
    }
    CollectiveSteps steps(devices);
    steps.join_each(inputs);
    steps.join_each(outputs);
    if (std::optional<Handle> reduced = steps.stage(0, inputs[0].size_in_use())) {
        steps.move(0, inputs[0], 0, *reduced);
        for (std::size_t index = 1; index < devices.size(); ++index) {
            steps.fold(index, inputs[index], 0, *reduced, type, op);
        }
        for (std::size_t index = 0; index < devices.size(); ++index) {
            steps.move(0, *reduced->slice(index * chunk, chunk), index, outputs[index]);
        }
    }
    return steps.finish();
}

Status send(Client& sender, const Handle& source, Client& receiver, const Handle& target) {
    std::array devices{sender, receiver};
    const std::array buffers{source, target};
    const std::array lists{BufferList{"source and target", buffers, source.size_in_use()}};
    if (Status valid = detail::check_collective("send", devices, lists, 1); !valid) {
        return valid;
    }
    CollectiveSteps steps(devices);
    steps.join_each(buffers);
    steps.move(0, source, 1, target);
    return steps.finish();
}

}  // namespace tandem
