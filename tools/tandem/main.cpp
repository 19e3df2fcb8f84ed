// The `tandem` command-line tool: git-style subcommands, each with its own --help.

#include "commands.hpp"

#include <string>
#include <utility>
#include <vector>

int main(int argc, char** argv) {
    CLI::App app{"tandem: multi-device runtime checks, scenarios and maintenance"};
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
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? 0 : 2;
    }
    for (const auto& [name, run] : commands) {
        if (app.got_subcommand(name)) {
            return run();
        }
    }
    return 2;
}
