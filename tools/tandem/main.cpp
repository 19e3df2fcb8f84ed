// The `tandem` command-line tool: git-style subcommands, each with its own --help. Every error
// the tool prints opens with "tandem: ", CLI11's own included, and a mistyped command or option
// gets the closest known one suggested.

#include "commands.hpp"
#include "help_footer.hpp"
#include "scenario_ranks.hpp"
#include "tandem/core/closest_name.hpp"

#include "tandem/core/version.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::tool {
namespace {

/// Prints that `given` is not a command, with the closest one when there is one close enough.
void say_unknown_command(const std::string& given, const std::vector<std::string>& names) {
    std::fprintf(stderr, "tandem: '%s' is not a command", given.c_str());
    if (const auto closest = closest_name(given, names)) {
        std::fprintf(stderr, "; did you mean '%s'?", closest->c_str());
    }
    std::fprintf(stderr, "\nRun 'tandem --help' for the list of commands.\n");
}

/// The options `command` knows, as they are typed ("--seed", "-v").
std::vector<std::string> option_names(const CLI::App& command) {
    std::vector<std::string> names;
    for (const CLI::Option* option : command.get_options()) {
        for (const std::string& name : option->get_lnames()) {
            names.push_back("--" + name);
        }
        for (const std::string& name : option->get_snames()) {
            names.push_back("-" + name);
        }
    }
    return names;
}

/// "tandem run" or "tandem", as a message names the command.
std::string command_words(const CLI::App& command) {
    return command.get_parent() == nullptr ? "tandem" : "tandem " + command.get_name();
}

/// One line for each argument that looks like a long option `command` does not know, with the
/// closest known one when there is one close enough.
std::string unknown_options(const CLI::App& command, const std::vector<std::string>& arguments) {
    const std::vector<std::string> known = option_names(command);
    std::string lines;
    for (const std::string& argument : arguments) {
        const std::string given = argument.substr(0, argument.find('='));
        // Long options only: a one-letter option is a step from every other one-letter option.
        const bool option_like = given.starts_with("--") && given.size() > 2;
        if (!option_like || std::find(known.begin(), known.end(), given) != known.end()) {
            continue;
        }
        lines += "tandem: '" + given + "' is not an option of '" + command_words(command) + "'";
        if (const auto closest = closest_name(given, known)) {
            lines += "; did you mean '" + *closest + "'?";
        }
        lines += "\n";
    }
    return lines;
}

/// One line naming the arguments `command` was given and does not take, from what CLI11 left.
std::string unexpected_arguments(const CLI::App& command) {
    std::string listed;
    for (const std::string& argument : command.remaining()) {
        listed += (listed.empty() ? "'" : ", '") + argument + "'";
    }
    if (listed.empty()) {
        return {};
    }
    return "tandem: '" + command_words(command) + "' does not take " + listed + "\n";
}

/// Says so and returns true when `given` is not an option of the tool itself, suggesting the
/// closest long option; false when it is one.
bool refuse_unknown_option(const CLI::App& app, const std::string& given) {
    const std::vector<std::string> known = option_names(app);
    if (std::find(known.begin(), known.end(), given) != known.end()) {
        return false;
    }
    std::fprintf(stderr, "tandem: '%s' is not an option of 'tandem'", given.c_str());
    if (const auto closest = given.starts_with("--") ? closest_name(given, known) : std::nullopt) {
        std::fprintf(stderr, "; did you mean '%s'?", closest->c_str());
    }
    std::fprintf(stderr, "\nRun 'tandem --help' for more information.\n");
    return true;
}

/// CLI11's parse errors as the tool's other errors read: "tandem: ...", then where to look.
void prefix_parse_errors(CLI::App& app, const std::vector<std::string>& arguments) {
    app.failure_message([&app, arguments](const CLI::App*, const CLI::Error& error) {
        const CLI::App* command = &app;
        std::string help = "tandem --help";
        if (!app.get_subcommands().empty()) {
            command = app.get_subcommands().front();
            help = "tandem " + command->get_name() + " --help";
        }
        std::string message;
        // Not by get_name(): CLI11 names an ExtrasError after the command that raised it. Its
        // own words ("The following arguments were not expected") give way to ours, which say
        // what each argument is and what was meant.
        if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
            message = unknown_options(*command, arguments);
            if (message.empty()) {
                message = unexpected_arguments(*command);
            }
        }
        if (message.empty()) {
            message = "tandem: " + std::string(error.what()) + "\n";
        }
        return message + "Run '" + help + "' for more information.\n";
    });
}

/// `tandem help [COMMAND]`: the tool's help, or one command's.
int print_help(CLI::App& app, const std::string& topic, const std::vector<std::string>& names) {
    if (topic.empty()) {
        std::printf(
            "%s",
            app.get_formatter()->make_help(&app, "tandem", CLI::AppFormatMode::Normal).c_str());
        return 0;
    }
    if (std::find(names.begin(), names.end(), topic) == names.end()) {
        say_unknown_command(topic, names);
        return 2;
    }
    CLI::App* command = app.get_subcommand(topic);
    std::printf("%s", command->get_formatter()
                          ->make_help(command, "tandem " + topic, CLI::AppFormatMode::Normal)
                          .c_str());
    return 0;
}

}  // namespace
}  // namespace tandem::tool

int main(int argc, char** argv) {
    using namespace tandem::tool;
    // A rank of a scenario run as a job, started by `tandem run` itself: not a command of ours.
    if (argc == 4 && std::string_view(argv[1]) == "--as-scenario-rank") {
        return run_as_scenario_rank(argv[2], std::strtoull(argv[3], nullptr, 10));
    }
    CLI::App app{"tandem: multi-device runtime checks, scenarios and maintenance"};
    app.set_version_flag("--version", std::string("tandem ") + tandem::version_string);
    app.require_subcommand(1);
    set_help_footer(
        app,
        "every command that reports (run, replay, explore, inspect, selfcheck, "
        "doctor, clean, bench) prints one document under --json. Its \"schema\" field "
        "(1 now) is raised when a field is removed or changes meaning; \"command\" "
        "names the command. 'tandem help COMMAND' lists its fields.",
        {{0, "done: every scenario, check or program did what it should"},
         {1, "a scenario, check or program did not (the output says which)"},
         {2,
          "usage or input error: an unknown command or option, a value out of "
          "range, a file that is missing, malformed or cannot be written (the message on "
          "stderr says which)"}});
    const std::vector<std::pair<std::string, Run>> commands{
        {"selfcheck", add_selfcheck(app)},
        {"clean", add_clean(app)},
        {"run", add_run(app)},
        {"launch", add_launch(app)},
        {"replay", add_replay(app)},
        {"explore", add_explore(app)},
        {"doctor", add_doctor(app)},
        {"inspect", add_inspect(app)},
        {"bench", add_bench(app)},
    };
    std::string help_topic;
    CLI::App* help = app.add_subcommand("help", "Print the help of tandem or of one command");
    help->add_option("command", help_topic, "The command to explain");
    std::vector<std::string> names{"help"};
    for (const auto& [name, run] : commands) {
        names.push_back(name);
    }
    const std::vector<std::string> arguments(argv + 1, argv + argc);
    if (!arguments.empty() && arguments[0][0] != '-' &&
        std::find(names.begin(), names.end(), arguments[0]) == names.end()) {
        say_unknown_command(arguments[0], names);
        return 2;
    }
    // An unknown option before any command would only be reported as a missing command.
    if (!arguments.empty() && arguments[0][0] == '-' && refuse_unknown_option(app, arguments[0])) {
        return 2;
    }
    prefix_parse_errors(app, arguments);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error) == 0 ? 0 : 2;
    }
    if (app.got_subcommand(help)) {
        return print_help(app, help_topic, names);
    }
    for (const auto& [name, run] : commands) {
        if (app.got_subcommand(name)) {
            return run();
        }
    }
    return 2;
}
