// open_runtime: the program's options, else the environment's, else the defaults, checked in
// one place and handed to the backend they name.

#include "tandem/open_runtime.hpp"

#include "tandem/backend/backend_registry.hpp"
#include "tandem/core/closest_name.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace tandem {
namespace {

constexpr std::uint32_t max_devices = 64;

/// One setting as it was given: its text, and where it came from (a variable or an option), for
/// the error that names it.
struct Given {
    std::string text;
    std::string source;
};

/// The value of environment variable `name`, when reading it is allowed and it is set and not
/// empty (an empty variable counts as unset, as in a shell's `VAR= program`).
std::optional<Given> from_environment(const RuntimeOptions& options, const char* name) {
    if (!options.from_environment) {
        return std::nullopt;
    }
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') {
        return std::nullopt;
    }
    return Given{value, name};
}

Error bad(const Given& given, std::string_view why) {
    return Error::invalid_argument(given.source + "='" + given.text + "': " + std::string(why));
}

/// `text` as a decimal or 0x-hexadecimal number of at most 64 bits: digits only, no sign, no
/// spaces, nothing wrapped.
std::optional<std::uint64_t> parse_u64(std::string_view text) {
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    if (text.empty()) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    for (const char c : text) {
        std::uint64_t digit = 0;
        if (c >= '0' && c <= '9') {
            digit = static_cast<std::uint64_t>(c - '0');
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            digit = static_cast<std::uint64_t>(c - 'a' + 10);
        } else if (base == 16 && c >= 'A' && c <= 'F') {
            digit = static_cast<std::uint64_t>(c - 'A' + 10);
        } else {
            return std::nullopt;
        }
        const auto b = static_cast<std::uint64_t>(base);
        if (value > (UINT64_MAX - digit) / b) {
            return std::nullopt;
        }
        value = value * b + digit;
    }
    return value;
}

Result<std::string> parse_backend(const Given& given) {
    const std::vector<std::string> known = available_backends();
    if (given.text == "auto" || std::ranges::find(known, given.text) != known.end()) {
        return given.text;
    }
    const std::vector<std::string> every = {"sim", "reference", "cuda", "auto"};
    if (std::ranges::find(every, given.text) != every.end()) {
        std::string built;
        for (const std::string& name : known) {
            built += (built.empty() ? "" : ", ") + name;
        }
        return bad(given, "this program does not link the " + given.text + " backend (tandem::" +
                              given.text + "); it has: " + built + ", auto");
    }
    const std::optional<std::string> near = closest_name(given.text, every);
    return bad(given, "no backend is called that" +
                          (near ? "; did you mean '" + *near + "'?" : std::string{}) +
                          " (sim, reference, cuda, auto)");
}

Result<std::uint32_t> parse_devices(const Given& given) {
    const std::optional<std::uint64_t> count = parse_u64(given.text);
    if (!count || *count == 0 || *count > max_devices) {
        return bad(given, "a runtime has 1 to " + std::to_string(max_devices) + " devices");
    }
    return static_cast<std::uint32_t>(*count);
}

Result<std::uint64_t> parse_seed(const Given& given) {
    const std::optional<std::uint64_t> seed = parse_u64(given.text);
    if (!seed) {
        return bad(given, "a seed is a decimal or 0x-hexadecimal number of at most 64 bits");
    }
    return *seed;
}

Result<std::string> parse_scheduler(const Given& given) {
    if (given.text != "deterministic" && given.text != "threads") {
        return bad(given, "the scheduler is 'deterministic' or 'threads'");
    }
    return given.text;
}

Result<std::vector<int>> parse_gpus(const Given& given) {
    std::vector<int> ordinals;
    std::string_view rest = given.text;
    while (true) {
        const std::size_t comma = rest.find(',');
        const std::optional<std::uint64_t> ordinal = parse_u64(rest.substr(0, comma));
        if (!ordinal || *ordinal > INT_MAX || ordinals.size() == max_devices) {
            return bad(given, "a list of 1 to " + std::to_string(max_devices) +
                                  " CUDA ordinals, comma-separated (0,0 places two devices on "
                                  "GPU 0)");
        }
        ordinals.push_back(static_cast<int>(*ordinal));
        if (comma == std::string_view::npos) {
            return ordinals;
        }
        rest.remove_prefix(comma + 1);
    }
}

/// The program's option when it set one, else the environment's; both checked by `parse`, the
/// environment's even when the program's wins.
template <typename T, typename Parse>
Result<std::optional<T>> choose(std::optional<Given> program, std::optional<Given> environment,
                                Parse parse) {
    std::optional<T> chosen;
    for (const std::optional<Given>& given : {environment, program}) {
        if (given) {
            Result<T> parsed = parse(*given);
            if (!parsed) {
                return parsed.error();
            }
            chosen = std::move(*parsed);
        }
    }
    return chosen;
}

std::optional<Given> option(bool set, std::string text, const char* name) {
    if (!set) {
        return std::nullopt;
    }
    return Given{std::move(text), std::string("RuntimeOptions::") + name};
}

std::string joined(const std::vector<int>& ordinals) {
    std::string text;
    for (const int ordinal : ordinals) {
        text += (text.empty() ? "" : ",") + std::to_string(ordinal);
    }
    return text;
}

/// The simulator where the program links it, the reference backend otherwise.
std::string default_backend() { return find_backend("sim") != nullptr ? "sim" : "reference"; }

/// `backend`, or for "auto" the first linked backend that says it is preferred here (CUDA where
/// a GPU is visible), else the default.
std::string resolve_auto(std::string backend) {
    if (backend != "auto") {
        return backend;
    }
    for (const std::string& name : available_backends()) {
        const BackendEntry* entry = find_backend(name);
        if (entry->preferred != nullptr && entry->preferred()) {
            return name;
        }
    }
    return default_backend();
}

template <typename... Results>
std::optional<Error> first_error(const Results&... results) {
    std::optional<Error> error;
    (void)((results.ok() || (error = results.error(), false)) && ...);
    return error;
}

/// Each setting, chosen and checked; the GPU list and the device count agree on CUDA.
Result<RuntimeSettings> resolve(const RuntimeOptions& options) {
    RuntimeSettings settings;
    auto backend = choose<std::string>(option(!options.backend.empty(), options.backend, "backend"),
                                       from_environment(options, "TANDEM_BACKEND"), parse_backend);
    auto devices = choose<std::uint32_t>(
        option(options.devices.has_value(), std::to_string(options.devices.value_or(0)), "devices"),
        from_environment(options, "TANDEM_DEVICES"), parse_devices);
    auto seed = choose<std::uint64_t>(
        option(options.seed.has_value(), std::to_string(options.seed.value_or(0)), "seed"),
        from_environment(options, "TANDEM_SEED"), parse_seed);
    auto scheduler =
        choose<std::string>(option(!options.scheduler.empty(), options.scheduler, "scheduler"),
                            from_environment(options, "TANDEM_SCHEDULER"), parse_scheduler);
    auto gpus = choose<std::vector<int>>(option(!options.gpus.empty(), joined(options.gpus), "gpus"),
                                         from_environment(options, "TANDEM_GPUS"), parse_gpus);
    if (std::optional<Error> error = first_error(backend, devices, seed, scheduler, gpus)) {
        return *error;
    }
    settings.backend = resolve_auto(backend->value_or(default_backend()));
    settings.seed = seed->value_or(1);
    settings.scheduler = scheduler->value_or("deterministic");
    if (settings.backend == "cuda" && gpus->has_value()) {
        settings.gpus = **gpus;
        if (devices->has_value() && **devices != settings.gpus.size()) {
            return Error::invalid_argument(
                std::to_string(**devices) + " devices asked for, but the GPU list '" +
                joined(settings.gpus) + "' places " + std::to_string(settings.gpus.size()));
        }
    }
    settings.devices = settings.gpus.empty() ? devices->value_or(1)
                                             : static_cast<std::uint32_t>(settings.gpus.size());
    if (Status rank = check_job_rank(options.rank); !rank) {
        return rank.error();
    }
    settings.rank = options.rank;
    return settings;
}

}  // namespace

Result<RuntimeSettings> runtime_settings(const RuntimeOptions& options) { return resolve(options); }

Result<std::shared_ptr<Runtime>> open_runtime(const RuntimeOptions& options) {
    Result<RuntimeSettings> settings = resolve(options);
    if (!settings) {
        return settings.error();
    }
    return find_backend(settings->backend)->open(*settings);
}

}  // namespace tandem
