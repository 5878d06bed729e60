-- Loads client-config/neovim/lspconfig.lua against stand-ins for nvim-lspconfig (not packaged
-- by Debian) and lsp/fusion_switch.lua, then opens the configuration. Writes JSON to
-- $FUSION_SWITCH_TEST_OUT: what was registered, the filetype, and the 0.11 config table.
local config_dir = os.getenv('FUSION_SWITCH_CONFIG_DIR')
local cfg = os.getenv('FUSION_SWITCH_TEST_CFG')
local seen = {}

package.preload['lspconfig.util'] = function()
  return {
    root_pattern = function(...)
      seen.root_markers = { ... }
      return function() return nil end -- no marker found: the snippet falls back to the folder
    end,
  }
end
package.preload['lspconfig.configs'] = function()
  return setmetatable({}, { __newindex = function(t, k, v) rawset(t, k, v); seen.registered = { name = k, config = v } end })
end
package.preload['lspconfig'] = function()
  return setmetatable({}, { __index = function(_, name)
    return { setup = function(opts) seen.setup = { name = name, opts = opts } end }
  end })
end

dofile(config_dir .. '/lspconfig.lua')
local default = seen.registered.config.default_config
local out = {
  registered = seen.registered.name,
  cmd = default.cmd,
  filetypes = default.filetypes,
  single_file_support = default.single_file_support,
  setup_name = seen.setup.name,
  setup_settings = seen.setup.opts.settings,
  lsp_config = dofile(config_dir .. '/lsp/fusion_switch.lua'),
}
out.root = default.root_dir(cfg)
out.root_markers = seen.root_markers
vim.cmd('edit ' .. vim.fn.fnameescape(cfg))
out.filetype = vim.bo.filetype
out.syntax = vim.bo.syntax
-- vim.filetype.match needs 0.8+; on 0.7 open each name in a scratch buffer instead.
out.detected = {}
for _, name in ipairs(vim.split(os.getenv('FUSION_SWITCH_TEST_NAMES'), ',')) do
  vim.cmd('enew')
  vim.cmd('file ' .. vim.fn.fnameescape('/project/' .. name))
  vim.cmd('filetype detect')
  out.detected[name] = vim.bo.filetype
end
local file = io.open(os.getenv('FUSION_SWITCH_TEST_OUT'), 'w')
file:write(vim.fn.json_encode(out))
file:close()
vim.cmd('qa!')
