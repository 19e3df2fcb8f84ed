// The `tandem` command-line tool: git-style subcommands, each with its own --help.

#include "commands.hpp"

#include "tandem/core/version.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

/// The edit distance between `a` and `b` (insertions, deletions and substitutions).
std::size_t distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// "unknown command" with the closest known one, when the first argument names no command.
bool refuse_unknown_command(int argc, char** argv, const std::vector<std::string>& names) {
    if (argc < 2 || argv[1][0] == '-') {
        return false;
    }
    const std::string given = argv[1];
    if (std::find(names.begin(), names.end(), given) != names.end()) {
        return false;
    }
    const auto closest = std::min_element(names.begin(), names.end(),
                                          [&](const std::string& a, const std::string& b) {
                                              return distance(given, a) < distance(given, b);
                                          });
    std::fprintf(stderr, "tandem: '%s' is not a command", given.c_str());
    if (distance(given, *closest) <= std::max<std::size_t>(2, given.size() / 3)) {
        std::fprintf(stderr, "; did you mean '%s'?", closest->c_str());
    }
    std::fprintf(stderr, "\nRun 'tandem --help' for the list of commands.\n");
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"tandem: multi-device runtime checks, scenarios and maintenance"};
    app.set_version_flag("--version", std::string("tandem ") + tandem::version_string);
    app.require_subcommand(1);
    const std::vector<std::pair<std::string, tandem::tool::Run>> commands{
        {"selfcheck", tandem::tool::add_selfcheck(app)},
        {"clean", tandem::tool::add_clean(app)},
        {"run", tandem::tool::add_run(app)},
        {"replay", tandem::tool::add_replay(app)},
        {"explore", tandem::tool::add_explore(app)},
        {"doctor", tandem::tool::add_doctor(app)},
        {"inspect", tandem::tool::add_inspect(app)},
        {"bench", tandem::tool::add_bench(app)},
    };
    std::string help_topic;
    CLI::App* help = app.add_subcommand("help", "Print the help of tandem or of one command");
    help->add_option("command", help_topic, "The command to explain");
    std::vector<std::string> names{"help"};
    for (const auto& [name, run] : commands) {
        names.push_back(name);
    }
    if (refuse_unknown_command(argc, argv, names)) {
        return 2;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? 0 : 2;
    }
    if (app.got_subcommand(help)) {
        if (help_topic.empty()) {
            std::printf(
                "%s",
                app.get_formatter()->make_help(&app, "tandem", CLI::AppFormatMode::Normal).c_str());
            return 0;
        }
        if (std::find(names.begin(), names.end(), help_topic) == names.end()) {
            std::fprintf(stderr, "tandem help: '%s' is not a command\n", help_topic.c_str());
            return 2;
        }
        CLI::App* topic = app.get_subcommand(help_topic);
        std::printf("%s", topic->get_formatter()
                              ->make_help(topic, "tandem " + help_topic, CLI::AppFormatMode::Normal)
                              .c_str());
        return 0;
    }
    for (const auto& [name, run] : commands) {
        if (app.got_subcommand(name)) {
            return run();
        }
    }
    return 2;
}
