// `tandem clean`: removes shared-memory segments of simulator runtimes whose process is gone,
// and nothing else: segments of live processes and other users' segments stay. This version
// unlinks a segment as soon as it is mapped (segment.hpp), so what there is to clean was left
// by older versions, or by a process killed in the moment between creating and unlinking one.

#include "commands.hpp"
#include "help_footer.hpp"
#include "json.hpp"

#include "tandem/sim/segment.hpp"

#include <cstdio>

namespace tandem::tool {
namespace {

struct CleanFlags {
    bool dry_run = false;
    bool json = false;
};

/// Lists the segments and what a clean would do with each; removes nothing.
void dry_run(const CleanFlags& flags, Json& document) {
    const std::vector<sim::StaleSegment> segments = sim::list_segments();
    Json& listed = document["segments"] = Json::array();
    for (const sim::StaleSegment& segment : segments) {
        const char* action = segment.owner_alive ? "keep" : "remove";
        listed.push_back({{"name", segment.name},
                          {"pid", segment.pid},
                          {"owner_alive", segment.owner_alive},
                          {"action", action}});
        if (!flags.json) {
            std::printf("%-6s %s (pid %d)\n", action, segment.name.c_str(), segment.pid);
        }
    }
    document["removed"] = 0;
    if (!flags.json && segments.empty()) {
        std::printf("no simulator segments in /dev/shm: nothing to clean\n");
    }
}

/// Removes the segments whose process is gone and lists them.
void clean(const CleanFlags& flags, Json& document) {
    const std::vector<std::string> removed = sim::clean_stale_segments();
    Json& listed = document["segments"] = Json::array();
    for (const std::string& name : removed) {
        listed.push_back({{"name", name}, {"action", "removed"}});
        if (!flags.json) {
            std::printf("removed %s\n", name.c_str());
        }
    }
    document["removed"] = removed.size();
    if (!flags.json) {
        std::printf("%zu stale segment%s removed\n", removed.size(),
                    removed.size() == 1 ? "" : "s");
    }
}

}  // namespace

Run add_clean(CLI::App& app) {
    auto* command =
        app.add_subcommand("clean", "Remove simulator segments left by processes that are gone");
    auto flags = std::make_shared<CleanFlags>();
    command->add_flag("--dry-run", flags->dry_run, "List what would be removed, remove nothing");
    command->add_flag("--json", flags->json, "Print one JSON document on stdout instead of lines");
    set_help_footer(*command,
                    "{schema, command: \"clean\", dry_run, segments, removed}. With --dry-run, "
                    "segments lists every simulator segment of this user as {name, pid, "
                    "owner_alive, action: \"keep\" or \"remove\"} and removed is 0; otherwise it "
                    "lists those removed as {name, action: \"removed\"} and removed counts them.",
                    {{0, "listed or removed (also when there was nothing to remove)"},
                     {2, "usage or input error: an unknown option, a value out of range"}});
    return [flags] {
        Json document = json_document("clean");
        document["dry_run"] = flags->dry_run;
        if (flags->dry_run) {
            dry_run(*flags, document);
        } else {
            clean(*flags, document);
        }
        if (flags->json) {
            std::printf("%s\n", json_text(document, 2).c_str());
        }
        return 0;
    };
}

}  // namespace tandem::tool
