#include "train/ablation/parent_death.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "autograd/error.h"

namespace relpos {

void stop_with_parent(pid_t parent) {
  require(::prctl(PR_SET_PDEATHSIG, SIGTERM) == 0, "cannot ask to stop with the parent: {}",
          std::strerror(errno));
  if (::getppid() != parent) ::raise(SIGTERM);
}

}  // namespace relpos
