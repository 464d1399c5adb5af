// Issue 28, through the real binary: outputs never replace inputs, only regular files
// are read, a lock file is never followed, --overwrite moves only a run's folder and
// never into itself, SIGHUP saves like SIGTERM, a broken stdout pipe never stops
// training, the children of a parallel sweep stop with it, and bad sample/eval
// arguments and sweep variant names are one-line errors.
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "tests/trained_box.h"
#include "train/store/checkpoint_folder.h"

namespace fs = std::filesystem;
using relpos::testing::relpos_in;
using relpos::testing::require_one_line_error;
using relpos::testing::slurp;
using relpos::testing::TempDir;
using relpos::testing::TrainedBox;

TEST_CASE("hostile: eval --json never replaces the checkpoint, its digest or a link to it",
          "[hostile][cli]") {
  TrainedBox box("hostile_cli");
  const std::string ckpt = box.checkpoint().string(), digest = ckpt + ".digest";
  const std::string bytes = slurp(ckpt), digest_bytes = slurp(digest);
  fs::create_symlink(ckpt, box.path() / "link.json");
  for (const std::string& json : {ckpt, digest, (box.path() / "link.json").string()}) {
    INFO(json);
    require_one_line_error(relpos_in(box.path(), {"eval", ckpt, "--json", json, "--batches", "1"}),
                           {"--json", "an output never replaces an input"});
  }
  REQUIRE(slurp(ckpt) == bytes);
  REQUIRE(slurp(digest) == digest_bytes);
}

TEST_CASE("hostile: configs, sweeps and corpora are read only when they are regular files",
          "[hostile][cli]") {
  TempDir box("hostile_fifo");
  box.write("tiny.yaml", relpos::testing::tiny_run_yaml());
  REQUIRE(::mkfifo((box.path() / "fifo.yaml").c_str(), 0644) == 0);
  // Before: each of these waited forever for a writer (killed at the time limit, -9).
  require_one_line_error(relpos_in(box.path(), {"train", "fifo.yaml"}, 30),
                         {"fifo.yaml", "a FIFO", "only a regular file is read"});
  require_one_line_error(relpos_in(box.path(), {"ablate", "fifo.yaml"}, 30),
                         {"sweep file", "a FIFO"});
  require_one_line_error(
      relpos_in(box.path(), {"train", "tiny.yaml", "data.source=fifo.yaml", "train.out_dir=r"}, 30),
      {"corpus file", "a FIFO"});
  // A symlink loop as data.source: exit 2 (was 1, an internal filesystem_error).
  fs::create_symlink("loop", box.path() / "loop");
  require_one_line_error(
      relpos_in(box.path(), {"train", "tiny.yaml", "data.source=loop", "train.out_dir=r2"}, 30),
      {"corpus file 'loop'", "cannot open"});
}

TEST_CASE("hostile: a second YAML document in a config or sweep file is an error",
          "[hostile][cli]") {
  TempDir box("hostile_yaml");
  const std::string tiny = relpos::testing::tiny_run_yaml();
  // The line of the "---" that starts the second document, after tiny's lines.
  const auto second_line = std::count(tiny.begin(), tiny.end(), '\n') + 1;
  box.write("two.yaml", tiny + "---\ntrain: {steps: [broken\n");
  box.write("two_ok.yaml", tiny + "---\ntrain: {steps: 9}\n");
  require_one_line_error(relpos_in(box.path(), {"train", "two_ok.yaml", "--dump-config"}),
                         {fmt::format("two_ok.yaml:{}:", second_line), "a second YAML document"});
  require_one_line_error(relpos_in(box.path(), {"train", "two.yaml", "--dump-config"}),
                         {"two.yaml"});
  box.write("sweep.yaml", "out_dir: s\nvariants: [{name: a}]\n---\nout_dir: t\n");
  require_one_line_error(relpos_in(box.path(), {"ablate", "sweep.yaml", "--dry-run"}),
                         {"sweep.yaml:3", "a second YAML document"});
}

TEST_CASE("hostile: the lock file is never opened through a symlink or as another file",
          "[hostile][cli]") {
  TempDir box("hostile_lock");
  box.write("tiny.yaml", relpos::testing::tiny_run_yaml());
  const fs::path victim = box.write("victim.txt", "precious\n");
  fs::create_directories(box.path() / "run");
  fs::create_symlink(victim, box.path() / "run/.lock");
  require_one_line_error(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run"}),
                         {"run/.lock", "symlink"});
  REQUIRE(slurp(victim) == "precious\n");
  fs::remove(box.path() / "run/.lock");
  fs::create_hard_link(victim, box.path() / "run/.lock");
  require_one_line_error(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run"}),
                         {"run/.lock", "not a regular file of its own"});
  REQUIRE(slurp(victim) == "precious\n");
}

TEST_CASE("hostile: --overwrite moves a run beside its folder, never a folder of other files",
          "[hostile][cli]") {
  TrainedBox box("hostile_cli");
  const std::string checkpoint = slurp(box.checkpoint());
  // A trailing slash: the old run goes to run.old-1 beside run/, not into run/.old-1.
  const auto over = relpos_in(
      box.path(), {"train", "tiny.yaml", "train.out_dir=run/", "train.steps=2", "--overwrite"});
  INFO(over.err);
  REQUIRE(over.exit_code == 0);
  REQUIRE(slurp(box.path() / "run.old-1/checkpoints/ckpt_00000004.h5") == checkpoint);
  REQUIRE(fs::exists(box.path() / "run/checkpoints/ckpt_00000002.h5"));
  REQUIRE_FALSE(fs::exists(box.path() / "run/.old-1"));

  // train.out_dir=. from inside the run: its folder is the run, moved to run.old-2 beside
  // it (the lock stays), never into a folder inside itself.
  const std::string second = slurp(box.path() / "run/checkpoints/ckpt_00000002.h5");
  // (Its output goes beside the folder: files of the test's own in it would not be a run's.)
  const std::string dot = "cd " + (box.path() / "run").string() + " && " + RELPOS_CLI +
                          " train ../tiny.yaml train.out_dir=. train.steps=3 --overwrite "
                          ">../dot.out 2>../dot.err";
  const int dot_status = std::system(dot.c_str());
  INFO(slurp(box.path() / "dot.err"));
  REQUIRE(dot_status == 0);
  REQUIRE(slurp(box.path() / "run.old-2/checkpoints/ckpt_00000002.h5") == second);
  REQUIRE(fs::exists(box.path() / "run/checkpoints/ckpt_00000003.h5"));
  REQUIRE(fs::exists(box.path() / "run.old-2/summary.json"));
  REQUIRE_FALSE(fs::exists(box.path() / "run/.old-1"));
  REQUIRE_FALSE(fs::exists(box.path() / "run/run.old-1"));

  // A folder of the user's files is no run: neither "already holds a run" nor moved.
  fs::create_directories(box.path() / "mine");
  box.write("mine/notes.txt", "notes\n");
  for (const bool overwrite : {false, true}) {
    std::vector<std::string> args = {"train", "tiny.yaml", "train.out_dir=mine"};
    if (overwrite) args.push_back("--overwrite");
    require_one_line_error(relpos_in(box.path(), args), {"'notes.txt'", "no relpos run writes"});
  }
  REQUIRE(slurp(box.path() / "mine/notes.txt") == "notes\n");
  REQUIRE_FALSE(fs::exists(box.path() / "mine.old-1"));

  // An input inside the folder that --overwrite would move aside.
  fs::copy_file(box.path() / "tiny.yaml", box.path() / "run/tiny.yaml");
  require_one_line_error(
      relpos_in(box.path(), {"train", "run/tiny.yaml", "train.out_dir=run", "--overwrite"}),
      {"--overwrite", "run/tiny.yaml", "lies inside train.out_dir"});
  REQUIRE(fs::exists(box.path() / "run/tiny.yaml"));
}

TEST_CASE("hostile: --init-from and eval --set keep to the rules of inputs and run folders",
          "[hostile][cli][rope_scaling]") {
  TrainedBox box("hostile_cli");
  const std::string ckpt = box.checkpoint().string(), bytes = slurp(ckpt);
  // --init-from starts a new run: a folder holding a run is refused without --overwrite,
  // and --overwrite may not move the checkpoint it starts from aside.
  require_one_line_error(
      relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run", "--init-from", ckpt}),
      {"already holds a run"});
  require_one_line_error(
      relpos_in(box.path(),
                {"train", "tiny.yaml", "train.out_dir=run", "--init-from", ckpt, "--overwrite"}),
      {"--overwrite", "the --init-from checkpoint", "lies inside train.out_dir"});
  REQUIRE(slurp(ckpt) == bytes);
  REQUIRE_FALSE(fs::exists(box.path() / "run.old-1"));
  // eval --set data.source names an input too: --json never replaces it.
  std::string corpus;
  for (int i = 0; i < 2000; ++i) corpus += "the quick brown fox jumps over the lazy dog\n";
  box.write("corpus.txt", corpus);
  require_one_line_error(relpos_in(box.path(), {"eval", ckpt, "--set", "data.source=corpus.txt",
                                                "--batches", "1", "--json", "corpus.txt"}),
                         {"--json", "the data.source file", "an output never replaces an input"});
  REQUIRE(slurp(box.path() / "corpus.txt") == corpus);
}

TEST_CASE("hostile: sample and eval refuse out-of-range arguments with one line",
          "[hostile][cli]") {
  TrainedBox box("hostile_cli");
  const std::string ckpt = box.checkpoint().string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sample", ckpt, "--prompt", "a", "--tokens", "-1"},
        {"sample", ckpt, "--prompt", "a", "--tokens", "1000000000000"},
        {"sample", ckpt, "--prompt", "a", "--seed", "-1"},
        {"eval", ckpt, "--batches", "-5"}}) {
    INFO(args[2] + " " + args.back());
    require_one_line_error(relpos_in(box.path(), args), {"relpos: error:"});
  }
  // A sample is printed as it is drawn: the prompt and every byte, then a newline.
  const auto r = relpos_in(box.path(), {"sample", ckpt, "--prompt", "ab", "--tokens", "5"});
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.size() == 2 + 5 + 1);
}

TEST_CASE("hostile: a sweep variant named like one of the sweep's outputs is refused",
          "[hostile][ablation][cli]") {
  TempDir box("hostile_variant");
  box.write("tiny.yaml", relpos::testing::tiny_run_yaml());
  for (const std::string name : {"results.md", "logs", "val_loss.png", "a.tmp"}) {
    box.write("sweep.yaml", "base: [tiny.yaml]\nout_dir: s\nvariants:\n  - {name: " + name + "}\n");
    INFO(name);
    require_one_line_error(relpos_in(box.path(), {"ablate", "sweep.yaml", "--dry-run"}),
                           {"'" + name + "'", "the sweep writes"});
  }
}

TEST_CASE("hostile: SIGHUP saves like SIGTERM and a broken stdout pipe never stops training",
          "[hostile][stop][cli]") {
  TempDir box("hostile_hup");
  box.write("long.yaml", relpos::testing::tiny_run_yaml({"train.steps=300", "train.eval_every=50",
                                                         "train.checkpoint_every=100"}));
  const pid_t pid =
      relpos::testing::spawn_relpos({"train", "long.yaml", "train.out_dir=run"}, box.path());
  relpos::testing::wait_for_lines(box.path() / "run" / "metrics.jsonl", 10);
  ::kill(pid, SIGHUP);
  REQUIRE(relpos::testing::wait_for(pid) == 129);
  REQUIRE(slurp(box.path() / "err").find("SIGHUP") != std::string::npos);
  REQUIRE(fs::exists(box.path() / "run/summary.json"));
  const auto summary = nlohmann::json::parse(slurp(box.path() / "run/summary.json"));
  const std::int64_t steps = summary["steps"];
  REQUIRE(fs::exists(box.path() / "run/checkpoints" / fmt::format("ckpt_{:08d}.h5", steps)));

  // `relpos train ... | head -c 1`: the reader leaves at once; the run still finishes.
  const std::string command = "cd " + box.path().string() + " && " + RELPOS_CLI +
                              " train long.yaml train.out_dir=piped train.steps=40 2>piped.err "
                              "| head -c 1 >/dev/null; echo ${PIPESTATUS[0]} > piped.status";
  REQUIRE(std::system(("bash -c '" + command + "'").c_str()) == 0);
  INFO(slurp(box.path() / "piped.err"));
  REQUIRE(slurp(box.path() / "piped.status") == "0\n");
  REQUIRE(nlohmann::json::parse(slurp(box.path() / "piped/summary.json"))["steps"] == 40);
}

TEST_CASE("hostile: a resume into a folder holding another run is refused without --overwrite",
          "[hostile][runs][cli]") {
  TrainedBox box("hostile_cli");
  REQUIRE(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=other"}).exit_code == 0);
  const std::string metrics = slurp(box.path() / "other/metrics.jsonl");
  const std::string summary = slurp(box.path() / "other/summary.json");
  const std::vector<std::string> resume = {
      "train",         "tiny.yaml", "train.out_dir=other",
      "train.steps=6", "--resume",  "run/checkpoints/ckpt_00000002.h5"};
  // Before: accepted; other/ lost metrics lines and summary.json, and mixed two runs.
  require_one_line_error(relpos_in(box.path(), resume),
                         {"'other' holds another run", "--overwrite"});
  REQUIRE(slurp(box.path() / "other/metrics.jsonl") == metrics);
  REQUIRE(slurp(box.path() / "other/summary.json") == summary);
  std::vector<std::string> overwrite = resume;
  overwrite.push_back("--overwrite");
  const auto r = relpos_in(box.path(), overwrite);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(slurp(box.path() / "other.old-1/summary.json") == summary);
  REQUIRE(fs::exists(box.path() / "other/checkpoints/ckpt_00000006.h5"));
  REQUIRE(slurp(box.path() / "other/summary.json") != summary);  // the new run's
}

TEST_CASE("hostile: a resume that fails before its first checkpoint leaves the run as it was",
          "[hostile][runs][cli]") {
  TrainedBox box("hostile_cli");
  std::map<std::string, std::string> before;
  for (const auto& entry : fs::recursive_directory_iterator(box.path() / "run"))
    if (entry.is_regular_file() && entry.path().filename() != ".lock")
      before[entry.path().string()] = slurp(entry.path());
  // Diverges at its first step (before: config.yaml rewritten, metrics.jsonl cut back to
  // step 2, summary.json deleted).
  const auto r = relpos_in(
      box.path(), {"train", "tiny.yaml", "train.out_dir=run", "train.steps=8", "optim.lr=1e30",
                   "optim.grad_clip=0", "--resume", "run/checkpoints/ckpt_00000002.h5"});
  INFO(r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find("diverged") != std::string::npos);
  std::map<std::string, std::string> after;
  for (const auto& entry : fs::recursive_directory_iterator(box.path() / "run"))
    if (entry.is_regular_file() && entry.path().filename() != ".lock")
      after[entry.path().string()] = slurp(entry.path());
  REQUIRE(after == before);
}

TEST_CASE("hostile: a resume from an older checkpoint moves the abandoned timeline aside",
          "[hostile][runs][cli]") {
  TempDir box("hostile_timeline");
  box.write("tiny.yaml", relpos::testing::tiny_run_yaml());
  REQUIRE(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=b", "train.steps=6",
                                 "train.checkpoint_every=1", "train.keep_checkpoints=0"})
              .exit_code == 0);
  const std::string old6 = slurp(box.path() / "b/checkpoints/ckpt_00000006.h5");
  const auto r = relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=b", "train.steps=5",
                                        "train.checkpoint_every=1", "train.keep_checkpoints=1",
                                        "--resume", "b/checkpoints/ckpt_00000002.h5"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("abandoned timeline after step 2") != std::string::npos);
  // Before: ckpt_00000006.h5 stayed and each new checkpoint was deleted right after its save.
  std::vector<std::string> left;
  for (const auto& [step, file] : relpos::list_checkpoints(box.path() / "b/checkpoints"))
    left.push_back(file.filename().string());
  REQUIRE(left == std::vector<std::string>{"ckpt_00000005.h5"});
  REQUIRE(slurp(box.path() / "b/checkpoints/abandoned-1/ckpt_00000006.h5") == old6);
  REQUIRE(fs::exists(box.path() / "b/checkpoints/abandoned-1/ckpt_00000003.h5.digest"));
  const auto again = relpos_in(
      box.path(), {"train", "tiny.yaml", "train.out_dir=b", "train.steps=5", "--resume", "b"});
  REQUIRE(again.exit_code == 0);
  REQUIRE(again.out.find("ckpt_00000005.h5 at step 5") != std::string::npos);
}

TEST_CASE("hostile: a resume may change optim.name; the optimizer then starts fresh",
          "[hostile][runs][cli]") {
  TrainedBox box("hostile_cli");
  // Before: "Optimizer::load_state: unexpected state ..." and no resume.
  const auto r = relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run", "train.steps=6",
                                        "optim.name=sgd", "--resume", "run"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.err.find("the optimizer starts with fresh state") != std::string::npos);
  REQUIRE(fs::exists(box.path() / "run/checkpoints/ckpt_00000006.h5"));
}

namespace {

// The pids of running processes whose command line holds `needle` (a zombie counts as ended).
std::vector<pid_t> processes_with(const std::string& needle) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(cmdline)), {});
    std::replace(text.begin(), text.end(), '\0', ' ');
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    stat >> pid >> comm >> state;
    if (text.find(needle) != std::string::npos && state != "Z") found.push_back(std::stoi(name));
  }
  return found;
}

}  // namespace

TEST_CASE("hostile: the children of a parallel sweep stop, saving, when it is killed",
          "[hostile][ablation][stop][cli]") {
  TempDir box("hostile_orphans");
  box.write("long.yaml",
            relpos::testing::tiny_run_yaml({"train.steps=100000", "train.eval_every=100000",
                                            "train.checkpoint_every=100000"}));
  box.write("sweep.yaml",
            "base: [long.yaml]\nout_dir: sweep\neval_lengths: [16]\njobs: 2\nvariants:\n"
            "  - {name: a}\n  - {name: b, overrides: [model.position.scheme=learned]}\n");
  const pid_t sweep = relpos::testing::spawn_relpos({"ablate", "sweep.yaml"}, box.path());
  relpos::testing::wait_for_lines(box.path() / "sweep/a/metrics.jsonl", 3);
  relpos::testing::wait_for_lines(box.path() / "sweep/b/metrics.jsonl", 3);
  const std::string marker = "--parent-pid " + std::to_string(sweep);
  REQUIRE(processes_with(marker).size() == 2);
  ::kill(sweep, SIGKILL);
  REQUIRE(relpos::testing::wait_for(sweep) == -SIGKILL);
  // Before: both children trained on, holding their folders' locks.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!processes_with(marker).empty()) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Each stopped on SIGTERM, so each saved where it stopped.
  for (const char* variant : {"a", "b"}) {
    INFO(variant);
    REQUIRE(relpos::latest_checkpoint(box.path() / "sweep" / variant / "checkpoints"));
    REQUIRE(fs::exists(box.path() / "sweep" / variant / "summary.json"));
  }
}

TEST_CASE("hostile: a resume never writes metrics through a symlink", "[hostile][runs][cli]") {
  TrainedBox box("hostile_cli");
  const fs::path victim = box.write("victim.jsonl", "{\"step\": 99}\nprecious\n");
  fs::remove(box.path() / "run/metrics.jsonl");
  fs::create_symlink(victim, box.path() / "run/metrics.jsonl");
  // Before: the resume cut the file it names back to the step and appended to it.
  require_one_line_error(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run",
                                                "train.steps=6", "--resume", "run"}),
                         {"metrics.jsonl is a symlink"});
  REQUIRE(slurp(victim) == "{\"step\": 99}\nprecious\n");
}
