// Every C++ code block of the README and the guide is a piece of a file in docs/examples/, which the
// build compiles: an example in the docs cannot stop compiling unnoticed. Lines are compared
// without their leading spaces, so a block may sit indented inside a function there. Every link
// of the README and of docs/ leads to a file of the repository (and a heading of it, if named).

#include <boost/test/unit_test.hpp>

#include <cctype>
#include <filesystem>
#include <map>
#include <set>
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

// The text outside fenced code blocks.
std::string prose(std::string const& markdown) {
  std::istringstream in{markdown};
  std::string out;
  bool in_code = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("```")) {
      in_code = !in_code;
      continue;
    }
    if (!in_code) out += line + '\n';
  }
  return out;
}

// The anchors GitHub gives the headings of `markdown`: lower case, punctuation dropped, spaces as
// hyphens, a repeated one numbered.
std::set<std::string> anchors(std::string const& markdown) {
  std::set<std::string> out;
  std::map<std::string, int> seen;
  std::istringstream in{prose(markdown)};
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with('#')) continue;
    auto const text = line.substr(line.find_first_not_of('#'));
    std::string slug;
    for (unsigned char c : text) {
      if (std::isalnum(c) || c == '_' || c == '-') slug += static_cast<char>(std::tolower(c));
      if (c == ' ') slug += '-';
    }
    if (slug.starts_with('-')) slug.erase(0, 1);
    auto const n = seen[slug]++;
    out.insert(n == 0 ? slug : slug + "-" + std::to_string(n));
  }
  return out;
}

// The targets of the links and images of `markdown`, web addresses left out.
std::vector<std::string> local_links(std::string const& markdown) {
  std::vector<std::string> out;
  auto const text = prose(markdown);
  for (auto pos = text.find("]("); pos != std::string::npos; pos = text.find("](", pos)) {
    pos += 2;
    auto const end = text.find(')', pos);
    auto target = text.substr(pos, end - pos);
    if (!target.starts_with("http://") && !target.starts_with("https://") && !target.starts_with("mailto:")) {
      out.push_back(target);
    }
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_link_of_the_readme_and_docs_leads_inside_the_repository) {
  auto const root = std::filesystem::canonical(source_dir);
  std::vector<std::filesystem::path> docs{root / "README.md"};
  for (auto const& entry : std::filesystem::directory_iterator{root / "docs"}) {
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  }
  int links = 0;
  for (auto const& doc : docs) {
    for (auto const& target : local_links(read(doc))) {
      ++links;
      auto const hash = target.find('#');
      auto const file = target.substr(0, hash);
      auto const path = file.empty() ? doc : std::filesystem::weakly_canonical(doc.parent_path() / file);
      bool const inside = path.string().starts_with(root.string() + "/");
      BOOST_TEST((inside && std::filesystem::exists(path)), doc.filename() << ": " << target << " is not a file of the repository");
      if (hash == std::string::npos || !inside || !std::filesystem::exists(path)) continue;
      BOOST_TEST(anchors(read(path)).contains(target.substr(hash + 1)), doc.filename() << ": no heading for " << target);
    }
  }
  BOOST_TEST(links >= 10);
}

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
