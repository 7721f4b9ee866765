// svcd: the kernel as a Poco ServerApplication.
#pragma once

#include <Poco/Util/ServerApplication.h>

#include <string>
#include <vector>

namespace svc::kernel {

class SvcdApp : public Poco::Util::ServerApplication {
 protected:
  void initialize(Poco::Util::Application& self) override;
  void defineOptions(Poco::Util::OptionSet& options) override;
  void handleOption(const std::string& name, const std::string& value) override;
  int main(const std::vector<std::string>& args) override;

 private:
  int serve();
  bool help_ = false;
  bool version_ = false;
  bool check_config_ = false;
  std::string config_file_;
  std::vector<std::string> sets_;
};

}  // namespace svc::kernel
