// The vault's part of the dashboard: the shared script with which pages open and seal an
// account's values in the browser (sdk::kVaultDashboardScript: libsodium.js and web/vault.js in
// one), and the vault page, where a person sees and sets up the account's end-to-end encryption.
#pragma once

#include <svc/sdk/dashboard.h>

#include <string_view>

namespace svc::plugins::vault {

namespace web {
/// The files of web/, built in byte for byte (embed.cmake).
std::string_view libsodiumSumo();
std::string_view libsodiumWrappers();
std::string_view vaultScript();
}  // namespace web

/// @return the script: libsodium-sumo.js, libsodium-wrappers.js and vault.js, in that order and in
/// one, so the wrappers take hold of libsodium before it can finish loading (were it to fall back
/// to its JavaScript build, it would drop what a later script looks for). It compiles WebAssembly.
sdk::DashboardScript dashboardScript();

/// @return the vault page (`/vault`, in the navigation).
sdk::DashboardPage dashboardPage();

}  // namespace svc::plugins::vault
