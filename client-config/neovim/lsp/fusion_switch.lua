-- Neovim 0.11+: put this folder's `lsp/` on your runtimepath (or copy this file to
-- ~/.config/nvim/lsp/fusion_switch.lua), add the filetype rule below to init.lua, then
-- call vim.lsp.enable('fusion_switch').
--
--   vim.filetype.add({ pattern = { ['.*/fusion_switch[^/]*%.cfg'] = 'fusion_switch',
--                                  ['.*%.fusion_switch%.cfg'] = 'fusion_switch' } })
return {
  cmd = { 'fusion-switch', 'serve' },
  filetypes = { 'fusion_switch' },
  root_markers = { '.git', '.vscode' },
  settings = {
    fusionSwitch = {
      target = '', -- e.g. 'Ascend950PR_9599'
      catalogue = { extraFiles = {} },
      compare = { onDump = '', offDump = '', onGraph = '', offGraph = '', output = '',
        memoryBudget = '', workers = 0, rank = '', iteration = '', step = '' },
    },
  },
}
