// The relpos executable: subcommands for training, evaluation, sampling,
// ablations and inspection. Errors become one line on stderr: exit 2 for bad
// input, 1 for internal failures.
#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "autograd/blas_kernel.h"
#include "autograd/error.h"
#include "train/commands/commands.h"

namespace {

// Every error is one line: a newline that reached a message unescaped shows as \n.
std::string one_line(std::string message) {
  for (std::size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at))
    message.replace(at, 1, "\\n");
  return message;
}

// The memory estimate (train/memory_estimate.h) refuses most such runs before they start.
int out_of_memory() {
  std::cerr << "relpos: error: out of memory; reduce the sizes (model.d_model, model.d_ff, "
               "model.n_layers, model.vocab, data.batch_size, data.seq_len, eval.lengths, "
               "the model.position table sizes)\n";
  return 2;
}

}  // namespace

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
    std::cerr << "relpos: error: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  } catch (const relpos::UsageError& e) {
    std::cerr << "relpos: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  } catch (const std::length_error&) {  // a container asked for more than it can hold
    return out_of_memory();
  } catch (const std::exception& e) {
    std::cerr << "relpos: internal error: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
