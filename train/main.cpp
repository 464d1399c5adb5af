// The relpos executable: subcommands for training, evaluation, sampling,
// ablations and inspection. Errors become one line on stderr: exit 2 for bad
// input, 1 for internal failures; a run stopped by SIGINT/SIGTERM exits 130/143.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "autograd/blas_kernel.h"
#include "autograd/error.h"
#include "train/commands/commands.h"
#include "train/stop_signal.h"

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  CLI::App app{"relpos: train small transformer LMs and ablate their position schemes"};
  app.require_subcommand(1);
  relpos::add_train_command(app);
  relpos::add_eval_command(app);
  relpos::add_sample_command(app);
  relpos::add_inspect_command(app);
  relpos::add_positions_command(app);
  relpos::add_ablate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help
    std::cerr << "relpos: error: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const relpos::StopRequested& e) {  // SIGINT or SIGTERM: saved, then stopped
    std::cerr << "relpos: " << e.what() << "\n";
    return e.exit_code();
  } catch (const relpos::UsageError& e) {
    std::cerr << "relpos: error: " << e.what() << "\n";
    // Without HDF5's exit-time teardown: after some corrupt files, HDF5 1.10 has leaked
    // blocks and would print "infinite loop closing library" lines after our one line.
    std::cout.flush();
    std::_Exit(2);
  } catch (const std::exception& e) {
    std::cerr << "relpos: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
