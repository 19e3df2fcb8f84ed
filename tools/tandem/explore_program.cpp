#include "commands.hpp"
namespace tandem::tool {
}
