// `tandem clean`: removes shared-memory segments of simulator runtimes whose process is gone,
// and nothing else: segments of live processes and other users' segments stay. This version
// unlinks a segment as soon as it is mapped (segment.hpp), so what there is to clean was left
// by older versions, or by a process killed in the moment between creating and unlinking one.
// It also removes job folders (job_folder.hpp) that no process holds: those of a job whose ranks
// and launcher all died at once. A folder of a running job is kept, whoever runs it.

#include "commands.hpp"
#include "help_footer.hpp"
#include "json.hpp"

#include "tandem/job_folder.hpp"
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
    Json& folders = document["job_folders"] = Json::array();
    for (const JobFolderEntry& folder : list_job_folders()) {
        const char* action = folder.in_use ? "keep" : "remove";
        folders.push_back({{"path", folder.path},
                           {"job_id", folder.job_id},
                           {"in_use", folder.in_use},
                           {"action", action}});
        if (!flags.json) {
            std::printf("%-6s %s (job folder%s)\n", action, folder.path.c_str(),
                        folder.in_use ? " in use" : " nobody holds");
        }
    }
    document["removed"] = 0;
    if (!flags.json && segments.empty() && folders.empty()) {
        std::printf("no simulator segments or job folders in /dev/shm: nothing to clean\n");
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
    const std::vector<std::string> folders = clean_job_folders();
    Json& listed_folders = document["job_folders"] = Json::array();
    for (const std::string& path : folders) {
        listed_folders.push_back({{"path", path}, {"action", "removed"}});
        if (!flags.json) {
            std::printf("removed %s\n", path.c_str());
        }
    }
    document["removed"] = removed.size() + folders.size();
    if (!flags.json) {
        std::printf("%zu stale segment%s and %zu job folder%s removed\n", removed.size(),
                    removed.size() == 1 ? "" : "s", folders.size(), folders.size() == 1 ? "" : "s");
    }
}

}  // namespace

Run add_clean(CLI::App& app) {
    auto* command =
        app.add_subcommand("clean",
                           "Remove simulator segments and job folders left by processes that are "
                           "gone");
    auto flags = std::make_shared<CleanFlags>();
    command->add_flag("--dry-run", flags->dry_run, "List what would be removed, remove nothing");
    command->add_flag("--json", flags->json, "Print one JSON document on stdout instead of lines");
    set_help_footer(*command,
                    "{schema, command: \"clean\", dry_run, segments, job_folders, removed}. With "
                    "--dry-run, segments lists every simulator segment of this user as {name, "
                    "pid, owner_alive, action: \"keep\" or \"remove\"}, job_folders every job "
                    "folder of this user as {path, job_id, in_use, action} and removed is 0; "
                    "otherwise they list those removed as {name or path, action: \"removed\"} "
                    "and removed counts both.",
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
