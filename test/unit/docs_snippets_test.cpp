// Every C++ code block of the README and the guide is a piece of a file in docs/examples/, which the
// build compiles: an example in the docs cannot stop compiling unnoticed. Lines are compared
// without their leading spaces, so a block may sit indented inside a function there.

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::filesystem::path const source_dir{REDISYNC_SOURCE_DIR};

std::string read(std::filesystem::path const& p) {
  std::ifstream in{p};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text without each line's leading spaces and without empty lines.
std::string normalized(std::string const& text) {
  std::istringstream in{text};
  std::string out;
  for (std::string line; std::getline(in, line);) {
    auto const first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    out += line.substr(first);
    out += '\n';
  }
  return out;
}

std::vector<std::string> cpp_blocks(std::string const& markdown) {
  std::vector<std::string> out;
  std::string const open = "```cpp\n";
  for (auto pos = markdown.find(open); pos != std::string::npos; pos = markdown.find(open, pos)) {
    pos += open.size();
    auto const end = markdown.find("```", pos);
    out.push_back(markdown.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_cpp_block_of_the_docs_is_in_a_compiled_example) {
  std::string examples;
  for (auto const& entry : std::filesystem::directory_iterator{source_dir / "docs/examples"}) {
    if (entry.path().extension() == ".cpp") examples += normalized(read(entry.path()));
  }
  int blocks = 0;
  for (auto const* doc : {"README.md", "docs/guide.md"}) {
    for (auto const& block : cpp_blocks(read(source_dir / doc))) {
      ++blocks;
      BOOST_TEST(examples.find(normalized(block)) != std::string::npos,
                 doc << ": this block is not in docs/examples/:\n" << block);
    }
  }
  BOOST_TEST(blocks >= 3);
}
