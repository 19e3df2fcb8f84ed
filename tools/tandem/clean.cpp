// `tandem clean`: removes shared-memory segments of simulator runtimes whose process is gone,
// and nothing else: segments of live processes and other users' segments stay.

#include "commands.hpp"

#include "tandem/sim/segment.hpp"

#include <cstdio>

namespace tandem::tool {

Run add_clean(CLI::App& app) {
    auto* command =
        app.add_subcommand("clean", "Remove simulator segments left by processes that are gone");
    auto dry_run = std::make_shared<bool>(false);
    command->add_flag("--dry-run", *dry_run, "List what would be removed, remove nothing");
    return [dry_run] {
        if (*dry_run) {
            const std::vector<sim::StaleSegment> segments = sim::list_segments();
            for (const sim::StaleSegment& segment : segments) {
                std::printf("%s %s (pid %d)\n", segment.owner_alive ? "keep  " : "remove",
                            segment.name.c_str(), segment.pid);
            }
            if (segments.empty()) {
                std::printf("no simulator segments in /dev/shm: nothing to clean\n");
            }
            return 0;
        }
        const std::vector<std::string> removed = sim::clean_stale_segments();
        for (const std::string& name : removed) {
            std::printf("removed %s\n", name.c_str());
        }
        std::printf("%zu stale segment%s removed\n", removed.size(),
                    removed.size() == 1 ? "" : "s");
        return 0;
    };
}

}  // namespace tandem::tool
