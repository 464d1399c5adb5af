#pragma once
// A child process that must not outlive the process that started it (the runs of
// a parallel `relpos ablate`): when the parent ends, however it ends (SIGKILL
// included), the kernel sends the child SIGTERM, which stops a run after its
// current step with a checkpoint (train/stop_signal.h).
#include <sys/types.h>

namespace relpos {

// Asks for SIGTERM when the parent dies; when `parent` has already ended (this
// process was re-parented before the request took effect), sends it now.
void stop_with_parent(pid_t parent);

}  // namespace relpos
