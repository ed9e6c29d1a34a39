// HealthService over an in-process channel: Check and Watch as gRPC's
// default health service answers them, and Shutdown ending every Watch.
#include "service/server/health.h"

#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace unwindd::service {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = Health::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override {
    health_.Shutdown();
    server_->Shutdown();
  }

  grpc::Status Check(const std::string& service, HealthCheckResponse* out) {
    grpc::ClientContext c;
    HealthCheckRequest req;
    req.set_service(service);
    return stub_->Check(&c, req, out);
  }

  HealthService health_{absl::Milliseconds(10)};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthTest, CheckKnowsTheServerAndNamedServicesOnly) {
  HealthCheckResponse r;
  ASSERT_TRUE(Check("", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check("unwindd.v1.Unwinder", &r).error_code(), grpc::StatusCode::NOT_FOUND);
  health_.SetServingStatus("unwindd.v1.Unwinder", true);
  ASSERT_TRUE(Check("unwindd.v1.Unwinder", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  health_.SetServingStatus(false);  // draining: every service
  ASSERT_TRUE(Check("", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  ASSERT_TRUE(Check("unwindd.v1.Unwinder", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  health_.Shutdown();
  health_.SetServingStatus(true);  // ignored once shut down
  ASSERT_TRUE(Check("", &r).ok());
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthTest, WatchSendsEveryChangeUntilShutdown) {
  grpc::ClientContext c;
  HealthCheckRequest req;
  req.set_service("unwindd.v1.Unwinder");
  auto reader = stub_->Watch(&c, req);
  HealthCheckResponse r;
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVICE_UNKNOWN);
  health_.SetServingStatus("unwindd.v1.Unwinder", true);
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  health_.SetServingStatus("other", true);  // not this one's change: nothing sent
  health_.SetServingStatus("unwindd.v1.Unwinder", false);
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  health_.SetServingStatus("unwindd.v1.Unwinder", true);
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  health_.Shutdown();
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(reader->Read(&r));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(HealthTest, WatchEndsWhenTheClientCancels) {
  grpc::ClientContext c;
  HealthCheckRequest req;
  auto reader = stub_->Watch(&c, req);
  HealthCheckResponse r;
  ASSERT_TRUE(reader->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  c.TryCancel();
  EXPECT_FALSE(reader->Read(&r));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The handler returned: a server shutdown does not wait for it.
  health_.SetServingStatus(true);
}

}  // namespace
}  // namespace unwindd::service
