#pragma once

// Random programs for `tandem explore`, and the byte-level oracle that says what each read must
// return.
//
// The oracle: a read returns bytes iff every byte it covers was last written by work that
// succeeded, and then they are the bytes the model computed; otherwise it fails, and its report
// names the root of every failure the model holds for those bytes. The model keeps, per byte, its
// value and the failure that claims it (none when clean), plus the failure slot of each shared
// allocation (P3 to P5). On a job, a unit may abandon a rank: from then on that rank's steps do not
// run (the model leaves them out of the scenario, waits on its events with them), and a launch of
// another rank reading its memory is skipped with `DeviceLost` naming it ("of rank R is lost"),
// which claims the launch's outputs (D1); what it wrote before, and the failures it left on other
// ranks' memory, stay as they were. A unit may also cut the connection between two living ranks
// (when cuts are asked for): the job cuts off the higher, which the model then treats as an
// abandoned rank, its reports naming the lost connection ("was cut off from the job: its
// connection to rank R was lost").
//
// A program is a list of units; a unit is one or a few steps that must stay together (a peer
// launch with the event that orders it and the sync after it). Shrinking drops whole units, so
// every shrunk program is still valid, and the expectations are recomputed by the model each time.

#include "scenario.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace tandem::tool {

/// A violation planted in a program, for tests of the explorer itself.
enum class PlantedViolation : std::uint8_t {
    none,
    /// The last read that expects bytes expects its first byte wrong.
    wrong_byte,
    /// The last read that expects a rank's loss expects it not lost: the program shrinks to
    /// the rank's death, the unit that read its memory and the read (nothing is planted in a
    /// program that reads no loss).
    loss_denied,
};

/// Whether `units` lose a rank, abandoned or cut off (a program on a job).
bool loses_a_rank(const std::vector<std::vector<Step>>& units);

struct ExploreProgram {
    std::uint32_t devices = 2;
    /// The ranks of the job it runs on (`devices / ranks` devices each, in order); 1: no job.
    std::uint32_t ranks = 1;
    std::uint64_t seed = 1;
    /// Allocations, shares and initial writes: never dropped.
    std::vector<Step> setup;
    std::vector<std::vector<Step>> units;
    /// For tests of the explorer itself: the program is a violation on purpose, and stays one
    /// however it shrinks.
    PlantedViolation planted_violation = PlantedViolation::none;
};

/// A program of `unit_count` random units over `devices` devices, drawn from `seed`. Over
/// `ranks` ranks (more than 1), a unit may abandon a rank (drawn from the seed), never the last
/// one living, and with `cut_percent` (0 to 100) above 0 a unit cuts the connection between two
/// living ranks with that chance in percent; with one rank the program is the same as it always
/// was, and so is a program with cuts off.
ExploreProgram generate_program(std::uint32_t devices, std::size_t unit_count, std::uint64_t seed,
                                std::uint32_t ranks = 1, std::uint32_t cut_percent = 0);

/// The program as a scenario, every read carrying the oracle's expectation.
Scenario annotate(const ExploreProgram& program);

}  // namespace tandem::tool
