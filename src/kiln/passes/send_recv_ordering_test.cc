// SendRecvOrdering: a send gets a control edge to the recv-done of its channel and that
// recv-done one to the channel's send-done (XLA's send -> recv-done -> send-done), never one
// that would make a cycle, and host transfers are left alone.
#include "kiln/passes/send_recv_ordering.h"

#include <gtest/gtest.h>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

TEST(SendRecvOrdering, SendBeforeRecvDoneOfItsChannel) {
  auto m = ParseHloModule(R"(
ENTRY e {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  rv = (f32[4], u32[], token[]) recv(tok), channel_id=5
  rd = (f32[4], token[]) recv-done(rv), channel_id=5
  sd = (f32[4], u32[], token[]) send(x, tok), channel_id=5
  sdd = token[] send-done(sd), channel_id=5
  other = (f32[4], u32[], token[]) send(x, tok), channel_id=6
  other_done = token[] send-done(other), channel_id=6
  ROOT g = f32[4] get-tuple-element(rd), index=0
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto changed = OrderSendsBeforeRecvDones(**m);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  const HloComputation* e = (*m)->entry_computation();
  const HloInstruction* rd = e->GetInstructionWithName("rd");
  ASSERT_EQ(rd->control_predecessors().size(), 1u);
  EXPECT_EQ(rd->control_predecessors()[0]->name(), "sd");
  // The send-done of channel 5 waits for its recv-done; channel 6 has no recv-done.
  const HloInstruction* sdd = e->GetInstructionWithName("sdd");
  ASSERT_EQ(sdd->control_predecessors().size(), 1u);
  EXPECT_EQ(sdd->control_predecessors()[0]->name(), "rd");
  EXPECT_TRUE(e->GetInstructionWithName("other_done")->control_predecessors().empty());
  auto again = OrderSendsBeforeRecvDones(**m);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);  // the send already reaches the recv-done
}

TEST(SendRecvOrdering, NoCycleWhenTheSendNeedsTheReceivedValue) {
  auto m = ParseHloModule(R"(
ENTRY e {
  tok = token[] after-all()
  rv = (f32[4], u32[], token[]) recv(tok), channel_id=5
  rd = (f32[4], token[]) recv-done(rv), channel_id=5
  v = f32[4] get-tuple-element(rd), index=0
  sd = (f32[4], u32[], token[]) send(v, tok), channel_id=5
  ROOT sdd = token[] send-done(sd), channel_id=5
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto changed = OrderSendsBeforeRecvDones(**m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(SendRecvOrdering, SendDoneBeforeRecvDoneWhenTheRecvNeedsItsToken) {
  auto m = ParseHloModule(R"(
ENTRY e {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  sd = (f32[4], u32[], token[]) send(x, tok), channel_id=5
  sdd = token[] send-done(sd), channel_id=5
  rv = (f32[4], u32[], token[]) recv(sdd), channel_id=5
  rd = (f32[4], token[]) recv-done(rv), channel_id=5
  ROOT g = f32[4] get-tuple-element(rd), index=0
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto changed = OrderSendsBeforeRecvDones(**m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);  // send -> send-done -> recv -> recv-done already
  EXPECT_TRUE((*m)->entry_computation()->GetInstructionWithName("sdd")->control_predecessors().empty());
}

TEST(SendRecvOrdering, HostTransfersAreLeftAlone) {
  auto m = ParseHloModule(R"(
ENTRY e {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  rv = (f32[4], u32[], token[]) recv(tok), channel_id=5, is_host_transfer=true
  rd = (f32[4], token[]) recv-done(rv), channel_id=5, is_host_transfer=true
  sd = (f32[4], u32[], token[]) send(x, tok), channel_id=5, is_host_transfer=true
  sdd = token[] send-done(sd), channel_id=5, is_host_transfer=true
  ROOT g = f32[4] get-tuple-element(rd), index=0
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto changed = OrderSendsBeforeRecvDones(**m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace kiln
