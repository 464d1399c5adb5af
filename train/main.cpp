// The relpos executable: subcommands for training, evaluation, sampling,
// ablations and inspection. Errors become one line on stderr: exit 2 for bad
// input, 1 for internal failures; a run stopped by SIGINT/SIGTERM/SIGHUP exits 130/143/129.
// Under mpirun, an error raised alike on every rank is printed once, by rank 0; an
// error of one rank alone is printed by that rank and ends the whole job (MPI_Abort).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "autograd/blas_kernel.h"
#include "autograd/error.h"
#include "train/commands/commands.h"
#include "train/distributed/distributed.h"
#include "train/process_memory.h"
#include "train/stop_signal.h"

namespace {

// Prints `line` and returns `code`, on every rank when the error is this rank's alone
// (then the job is aborted), on rank 0 only when every rank raised it.
int report(const std::string& line, int code, bool on_every_rank) {
  if (relpos::world_size() == 1 || on_every_rank) {
    if (relpos::is_root()) std::cerr << line << std::flush;
    return code;
  }
  std::cerr << fmt::format("{} (rank {} of {})\n", line.substr(0, line.size() - 1), relpos::rank(),
                           relpos::world_size())
            << std::flush;
  relpos::abort_job(code);
}

// Every error is one line: a newline that reached a message unescaped shows as \n.
std::string one_line(std::string message) {
  for (std::size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at))
    message.replace(at, 1, "\\n");
  return message;
}

// The memory estimate (train/config/memory_estimate.h) refuses most such runs before they
// start, and start_memory_check.cpp a memory limit too small for the libraries.
// Under a memory limit (ulimit -v, ulimit -d, a cgroup's memory.max) the line names it.
std::string out_of_memory() {
  const relpos::MemoryLimit limit = relpos::process_memory_limit();
  return fmt::format(
      "relpos: error: out of memory{}; reduce the sizes (model.d_model, model.d_ff, "
      "model.n_layers, model.vocab, data.batch_size, data.seq_len, eval.lengths, "
      "the model.position table sizes)\n",
      limit.what.empty() ? "" : " under " + limit.what);
}

// A std::bad_alloc that escapes where nothing catches it (an OpenMP worker thread, a
// noexcept function) ends in the same one line, exit 2, instead of SIGABRT.
[[noreturn]] void terminate_out_of_memory() {
  if (const std::exception_ptr escaped = std::current_exception()) {
    try {
      std::rethrow_exception(escaped);
    } catch (const std::bad_alloc&) {
      const std::string line = out_of_memory();
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
      std::_Exit(2);
    } catch (...) {
    }
  }
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(terminate_out_of_memory);
  // A reader that went away (`relpos train ... | head -1`) ends the printing, never the
  // run: writes to the broken pipe fail (std::cout stops) instead of killing the process.
  std::signal(SIGPIPE, SIG_IGN);
  relpos::use_best_blas_kernel(argv);
  const relpos::DistributedScope mpi(argc, argv);
  CLI::App app{"relpos: train small transformer LMs and ablate their position schemes"};
  app.require_subcommand(1);
  relpos::add_train_command(app);
  relpos::add_eval_command(app);
  relpos::add_sample_command(app);
  relpos::add_inspect_command(app);
  relpos::add_positions_command(app);
  relpos::add_ablate_command(app);
  relpos::add_export_command(app);
  relpos::add_tokenizer_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return relpos::is_root() ? app.exit(e) : 0;  // --help
    return report(fmt::format("relpos: error: {} (see --help)\n", one_line(e.what())), 2, true);
  } catch (const relpos::StopRequested& e) {  // SIGINT, SIGTERM or SIGHUP: saved, then stopped
    return report(fmt::format("relpos: {}\n", e.what()), e.exit_code(), true);
  } catch (const relpos::CollectiveError& e) {
    return report(fmt::format("relpos: error: {}\n", one_line(e.what())), 2, true);
  } catch (const relpos::UsageError& e) {
    report(fmt::format("relpos: error: {}\n", one_line(e.what())), 2, false);
    // Without HDF5's exit-time teardown: after some corrupt files, HDF5 1.10 has leaked
    // blocks and would print "infinite loop closing library" lines after our one line.
    std::cout.flush();
    std::_Exit(2);
  } catch (const std::bad_alloc&) {
    return report(out_of_memory(), 2, false);
  } catch (const std::length_error&) {  // a container asked for more than it can hold
    return report(out_of_memory(), 2, false);
  } catch (const std::exception& e) {
    return report(fmt::format("relpos: internal error: {}\n", one_line(e.what())), 1, false);
  }
  return 0;
}
