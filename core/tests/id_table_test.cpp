// The id table against std::unordered_map: after every insert or erase of a random sequence, the
// two hold the same entries. Sequences are drawn from a seed printed on failure.

#include "tandem/backend/detail/id_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace tandem::detail {
namespace {

void expect_same(const IdTable<std::uint64_t>& table,
                 const std::unordered_map<std::uint64_t, std::uint64_t>& model, std::uint64_t seed,
                 int step) {
    ASSERT_EQ(table.size(), model.size()) << "seed " << seed << " step " << step;
    for (const auto& [key, value] : model) {
        const std::uint64_t* found = table.find(key);
        ASSERT_NE(found, nullptr) << "seed " << seed << " step " << step << " key " << key;
        ASSERT_EQ(*found, value) << "seed " << seed << " step " << step << " key " << key;
    }
    std::size_t visited = 0;
    table.for_each([&](std::uint64_t key, std::uint64_t value) {
        ++visited;
        EXPECT_EQ(model.at(key), value) << "seed " << seed << " step " << step;
    });
    ASSERT_EQ(visited, model.size()) << "seed " << seed << " step " << step;
}

TEST(IdTable, holds_the_same_entries_as_a_map_through_random_inserts_and_erases) {
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        std::mt19937_64 rng(seed);
        IdTable<std::uint64_t> table;
        std::unordered_map<std::uint64_t, std::uint64_t> model;
        // Few distinct keys, so that erases hit and runs of collisions form and break up; both
        // sequential ids and 256-byte-aligned addresses, as the manager and pools use.
        const std::uint64_t stride = seed % 2 == 0 ? 1 : 256;
        for (int step = 0; step < 3000; ++step) {
            const std::uint64_t key = (1 + rng() % 200) * stride;
            if (rng() % 3 == 0) {
                ASSERT_EQ(table.erase(key), model.erase(key) == 1) << "seed " << seed;
            } else if (!model.contains(key)) {
                const std::uint64_t value = rng();
                table.insert(key, value);
                model.emplace(key, value);
            }
            ASSERT_EQ(table.find(key) != nullptr, model.contains(key)) << "seed " << seed;
            if (step % 97 == 0) {
                expect_same(table, model, seed, step);
            }
        }
        expect_same(table, model, seed, 3000);
    }
}

TEST(IdTable, find_or_insert_and_clear_hold_the_same_entries_as_a_map) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        std::mt19937_64 rng(seed);
        IdTable<std::vector<std::uint64_t>> table;
        std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> model;
        for (int step = 0; step < 3000; ++step) {
            const std::uint64_t key = 1 + rng() % 100;
            const std::uint64_t draw = rng() % 50;
            if (draw == 0) {
                table.clear();
                model.clear();
            } else if (draw < 10) {
                ASSERT_EQ(table.erase(key), model.erase(key) == 1) << "seed " << seed;
            } else {
                const std::uint64_t value = rng();
                table.find_or_insert(key).push_back(value);
                model[key].push_back(value);
            }
            ASSERT_EQ(table.size(), model.size()) << "seed " << seed << " step " << step;
            for (const auto& [id, values] : model) {
                const std::vector<std::uint64_t>* found = table.find(id);
                ASSERT_NE(found, nullptr) << "seed " << seed << " step " << step << " key " << id;
                ASSERT_EQ(*found, values) << "seed " << seed << " step " << step << " key " << id;
            }
        }
    }
}

TEST(IdTable, a_cleared_table_finds_nothing_and_inserts_afresh) {
    IdTable<std::vector<int>> table;
    for (std::uint64_t key = 1; key <= 40; ++key) {
        table.find_or_insert(key).push_back(static_cast<int>(key));
    }
    table.clear();
    EXPECT_TRUE(table.empty());
    for (std::uint64_t key = 1; key <= 40; ++key) {
        EXPECT_EQ(table.find(key), nullptr) << "key " << key;
    }
    EXPECT_TRUE(table.find_or_insert(7).empty());  // Not the value cleared away.
    EXPECT_EQ(table.size(), 1u);
}

TEST(IdTable, an_empty_table_finds_and_erases_nothing) {
    IdTable<int> table;
    EXPECT_EQ(table.find(7), nullptr);
    EXPECT_FALSE(table.erase(7));
    EXPECT_TRUE(table.empty());
}

}  // namespace
}  // namespace tandem::detail
