#include "ringio/channel.hpp"

namespace ringio::detail {

const op_vtable channel_wait_vtable = {.prepare = nullptr, .attempt = nullptr, .on_cqe = nullptr,
                                       .step = nullptr, .complete = resume_waiter};

}  // namespace ringio::detail
