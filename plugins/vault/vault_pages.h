// The vault's part of the dashboard: the shared scripts with which pages open and seal an
// account's values in the browser (sdk::kVaultDashboardScript: web/vault.js, the page's part;
// sdk::kVaultWorkerScript: libsodium.js and web/vault-worker.js, the Web Worker that derives and
// holds the key, opens and seals), and the vault page, where a person sees and sets up the
// account's end-to-end encryption.
#pragma once

#include <svc/sdk/dashboard.h>

#include <string_view>

namespace svc::plugins::vault {

namespace web {
/// The files of web/, built in byte for byte (embed.cmake).
std::string_view libsodiumSumo();
std::string_view libsodiumWrappers();
std::string_view vaultScript();
std::string_view workerScript();
}  // namespace web

/// @return the page script: vault.js alone. It holds no cryptography (the worker does it all), so
/// the pages that load it compile no WebAssembly.
sdk::DashboardScript dashboardScript();

/// @return the worker script: libsodium-sumo.js, libsodium-wrappers.js and vault-worker.js, in
/// that order and in one, so the wrappers take hold of libsodium before it can finish loading
/// (were it to fall back to its JavaScript build, it would drop what a later script looks for).
/// vault.js starts it as a Web Worker; it compiles WebAssembly.
sdk::DashboardScript workerScript();

/// @return the vault page (`/vault`, in the navigation).
sdk::DashboardPage dashboardPage();

}  // namespace svc::plugins::vault
