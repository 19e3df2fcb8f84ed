// The `tandem` command-line tool: git-style subcommands, each with its own --help.

#include "commands.hpp"

int main(int argc, char** argv) {
    CLI::App app{"tandem: multi-device runtime checks, scenarios and maintenance"};
    app.require_subcommand(1);
    tandem::tool::Run selfcheck = tandem::tool::add_selfcheck(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        const int code = app.exit(error);
        return code == 0 ? 0 : 2;
    }
    if (app.got_subcommand("selfcheck")) {
        return selfcheck();
    }
    return 2;
}
