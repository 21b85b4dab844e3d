// The status page's routes in process: the shell and its files (no key, strict headers), the
// JSON route under the admin rules, what a conversation looks like there, and --no-ui.
#include <gtest/gtest.h>
#include <httplib.h>

#include "server/routes/api_server.h"
#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

class StatusPageTest : public ::testing::Test {
 protected:
  void start(ServerOptions options = {}) {
    options.port = 0;
    server_ = std::make_unique<ApiServer>(options, registry_);
    server_->start();
    runtime_ = testing::make_fake_runtime({});
    server_->set_ready(runtime_, hooks_);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(30, 0);
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(2000));
  }
  httplib::Result status(const std::string& key = "any", const std::string& query = "") {
    return client_->Get(("/admin/ui/status" + query).c_str(),
                        {{"Authorization", "Bearer " + key}});
  }

  MetricsRegistry registry_;
  testing::RecordingHooks hooks_;
  std::shared_ptr<ModelRuntime> runtime_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

void expect_page_headers(const httplib::Result& res) {
  const std::string csp = res->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << csp;
  EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
}

TEST_F(StatusPageTest, ShellAndFilesNeedNoKeyAndForbidInlineCodeAndFraming) {
  start();
  auto page = client_->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  expect_page_headers(page);
  EXPECT_NE(page->body.find("src=\"/ui/status.js\""), std::string::npos);
  // Self-contained: nothing is fetched from another origin, and no code is inline.
  EXPECT_EQ(page->body.find("http://"), std::string::npos);
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
  EXPECT_EQ(page->body.find("<script>"), std::string::npos);
  EXPECT_EQ(page->body.find("onclick"), std::string::npos);
  auto js = client_->Get("/ui/status.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  expect_page_headers(js);
  // Client text goes in as text: the script never parses strings as HTML.
  EXPECT_EQ(js->body.find("innerHTML"), std::string::npos);
  EXPECT_EQ(js->body.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(js->body.find("document.write"), std::string::npos);
  auto css = client_->Get("/ui/status.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->get_header_value("Content-Type"), "text/css; charset=utf-8");
}

TEST_F(StatusPageTest, DataNeedsTheKeyAsTheAdminRoutesDo) {
  ServerOptions options;
  options.api_key = "page-key";
  start(options);
  auto none = client_->Get("/admin/ui/status");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(status("wrong")->status, 401);
  auto ok = status("page-key");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  expect_page_headers(ok);
  const json body = json::parse(ok->body);
  EXPECT_EQ(body["server"]["model"], runtime_->model_id);
  EXPECT_EQ(body["server"]["backend"], "cpu");
  EXPECT_EQ(body["server"]["slots"], 4);
  EXPECT_TRUE(body["cache"].is_null());  // no cache given to set_ready
  EXPECT_EQ(body["queue"]["waiting"], 0);
  EXPECT_EQ(body["activity"]["conversations"].size(), 0u);
  EXPECT_EQ(status("page-key", "?since=abc")->status, 400);
  // The shell stays open without the key: it asks for one.
  EXPECT_EQ(client_->Get("/")->status, 200);
}

TEST_F(StatusPageTest, ClosedOnAnOpenHostWithoutAKey) {
  ServerOptions options;
  options.host = "0.0.0.0";
  start(options);
  EXPECT_EQ(status()->status, 403);
  EXPECT_EQ(client_->Get("/")->status, 200);
}

TEST_F(StatusPageTest, RequestsBecomeTurnsOfTheirConversation) {
  start();
  const std::string agent = "<script>alert(1)</script>";
  httplib::Headers headers = {{"Authorization", "Bearer x"},
                              {"User-Agent", agent},
                              {"X-Claude-Code-Session-Id", "session-42"}};
  json body = {{"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"max_tokens", 3}};
  for (int i = 0; i < 2; ++i) {
    auto res = client_->Post("/v1/chat/completions", headers, body.dump(), "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
  }
  auto bad = client_->Post("/v1/chat/completions", headers, "{\"messages\": 3}",
                           "application/json");
  ASSERT_EQ(bad->status, 400);
  // The scheduler records a request after its answer has gone: wait for the second.
  json activity;
  for (int tries = 0; tries < 200; ++tries) {
    activity = json::parse(status()->body)["activity"];
    if (!activity["conversations"].empty() && activity["conversations"][0]["turns"].size() == 2)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(activity["conversations"].size(), 1u);
  const json& c = activity["conversations"][0];
  EXPECT_EQ(c["key"], "session-42");
  EXPECT_EQ(c["client"], agent);  // as sent: the page inserts it as text
  ASSERT_EQ(c["turns"].size(), 2u);
  EXPECT_EQ(c["turns"][0]["turn"], 1);
  EXPECT_EQ(c["turns"][1]["turn"], 2);
  EXPECT_EQ(c["turns"][0]["outcome"], "miss");  // no cache here
  EXPECT_EQ(c["turns"][0]["cause"], "none");
  bool rejected_shown = false;
  for (const json& r : activity["requests"]) {
    if (r["status"] == 400 && !r["ran"].get<bool>()) rejected_shown = true;
  }
  EXPECT_TRUE(rejected_shown) << activity["requests"].dump();
}

TEST_F(StatusPageTest, NoUiTurnsPageAndDataOff) {
  ServerOptions options;
  options.ui_enabled = false;
  start(options);
  EXPECT_EQ(client_->Get("/")->status, 404);
  EXPECT_EQ(client_->Get("/ui/status.js")->status, 404);
  EXPECT_EQ(status()->status, 404);
}

}  // namespace
}  // namespace qmlx::server
