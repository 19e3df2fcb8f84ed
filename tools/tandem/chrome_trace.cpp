// Chrome trace event format from the simulator's operation records, for Perfetto and
// chrome://tracing.
//
// One process per device of each scenario, one thread per stream. Each operation is a "B"/"E"
// pair; failed, skipped and lost operations add an instant event carrying the reason. Time is
// the scheduler step (shown as one millisecond each); records within one step get consecutive
// microseconds so that a begin never sorts after the end that follows it.

#include "chrome_trace.hpp"

#include "json.hpp"

#include <fstream>
#include <map>
#include <set>
#include <vector>

namespace tandem::tool {
namespace {

constexpr std::uint64_t microseconds_per_step = 1000;

/// Events in the order written; the document holds them under "traceEvents".
struct TraceWriter {
    Json& events;

    void event(Json body) { events.push_back(std::move(body)); }
};

/// The fields every event has: its name, phase, time and where it sits (process and thread).
Json common(const char* phase, const std::string& name, std::uint64_t ts, std::uint64_t pid,
            std::uint64_t tid) {
    return Json{{"name", name}, {"ph", phase}, {"ts", ts}, {"pid", pid}, {"tid", tid}};
}

/// `event` with `key` set to `value`.
Json with(Json event, const char* key, Json value) {
    event[key] = std::move(value);
    return event;
}

/// Writes one scenario's records starting at `base_us`; returns where the next may start.
std::uint64_t write_scenario_trace(TraceWriter& writer, const ScenarioResult& result,
                                   std::size_t scenario_index, std::uint64_t base_us) {
    const std::uint64_t pid_base = (scenario_index + 1) * 1000;
    std::set<std::uint32_t> devices;
    std::set<std::pair<std::uint32_t, std::uint64_t>> threads;
    for (const sim::TraceRecord& record : result.trace) {
        devices.insert(record.device);
        threads.insert({record.device, record.stream.value});
    }
    for (std::uint32_t device : devices) {
        writer.event(with(common("M", "process_name", base_us, pid_base + device, 0), "args",
                          {{"name", result.name + " - device " + std::to_string(device)}}));
    }
    for (const auto& [device, stream] : threads) {
        writer.event(with(common("M", "thread_name", base_us, pid_base + device, stream), "args",
                          {{"name", "stream " + std::to_string(stream)}}));
    }
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::string>> open;
    std::uint64_t last_step = 0;
    std::uint64_t within_step = 0;
    std::uint64_t ts = base_us;
    for (const sim::TraceRecord& record : result.trace) {
        within_step = record.step == last_step ? within_step + 1 : 0;
        last_step = record.step;
        ts = std::max(ts + 1, base_us + record.step * microseconds_per_step + within_step);
        const std::uint64_t pid = pid_base + record.device;
        const std::uint64_t tid = record.stream.value;
        const std::string label = record.label + " #" + std::to_string(record.sequence);
        if (record.phase == sim::TraceRecord::Phase::Begin) {
            writer.event(with(common("B", label, ts, pid, tid), "cat", "operation"));
            open[{pid, tid}].push_back(label);
            continue;
        }
        auto& stack = open[{pid, tid}];
        if (stack.empty()) {
            continue;  // An end whose begin was dropped with the bounded record list.
        }
        stack.pop_back();
        writer.event(with(common("E", label, ts, pid, tid), "args", {{"outcome", record.outcome}}));
        if (!record.outcome.starts_with("ok")) {
            const std::string what = record.outcome.substr(0, record.outcome.find(':'));
            Json instant = with(common("i", what + ": " + record.label, ts, pid, tid), "s", "t");
            instant["cat"] = "failure";
            writer.event(with(std::move(instant), "args", {{"outcome", record.outcome}}));
        }
    }
    // Every begin gets its end, even for work the run abandoned.
    for (auto& [key, stack] : open) {
        while (!stack.empty()) {
            writer.event(with(common("E", stack.back(), ++ts, key.first, key.second), "args",
                              {{"outcome", "unfinished"}}));
            stack.pop_back();
        }
    }
    return ts + microseconds_per_step;
}

}  // namespace

bool write_chrome_trace(const std::string& path, const std::vector<ScenarioResult>& results) {
    // The format's own keys, and the tool's schema version, which trace viewers keep as
    // metadata.
    Json document{
        {"schema", json_schema_version}, {"displayTimeUnit", "ms"}, {"traceEvents", Json::array()}};
    TraceWriter writer{document["traceEvents"]};
    std::uint64_t base_us = 0;
    for (std::size_t index = 0; index < results.size(); ++index) {
        base_us = write_scenario_trace(writer, results[index], index, base_us);
        if (!results[index].passed) {
            Json failed = with(common("i", "scenario failed: " + results[index].name, base_us,
                                      (index + 1) * 1000, 0),
                               "s", "g");
            writer.event(with(std::move(failed), "args", {{"failure", results[index].failure}}));
        }
    }
    std::ofstream out(path);
    out << json_text(document) << "\n";
    return static_cast<bool>(out);
}

}  // namespace tandem::tool
