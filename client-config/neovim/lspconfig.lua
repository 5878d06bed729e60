-- fusion-switch with nvim-lspconfig (custom server). Put this in your init.lua.
-- Neovim 0.11+ without nvim-lspconfig: see lsp/fusion_switch.lua in this folder instead.

vim.filetype.add({
  pattern = {
    ['.*/fusion_switch[^/]*%.cfg'] = 'fusion_switch',
    ['.*%.fusion_switch%.cfg'] = 'fusion_switch',
  },
})
vim.api.nvim_create_autocmd('FileType', {
  pattern = 'fusion_switch',
  callback = function(args)
    vim.bo[args.buf].syntax = 'json'
  end,
})

local configs = require('lspconfig.configs')
local util = require('lspconfig.util')

if not configs.fusion_switch then
  configs.fusion_switch = {
    default_config = {
      cmd = { 'fusion-switch', 'serve' },
      filetypes = { 'fusion_switch' },
      root_dir = function(fname)
        return util.root_pattern('.git', '.vscode')(fname)
          or vim.fn.fnamemodify(fname, ':p:h')
      end,
      single_file_support = true,
      settings = { fusionSwitch = { target = '' } },
    },
    docs = {
      description = 'fusion-switch: language server for Ascend CANN fusion_switch.cfg '
        .. '(pip install fusion-switch).',
    },
  }
end

require('lspconfig').fusion_switch.setup({
  -- cmd = { '/path/to/venv/bin/python', '-m', 'fusion_switch', 'serve' },
  settings = {
    fusionSwitch = {
      target = 'Ascend950PR_9599', -- --soc_version or product name, '' for none
      catalogue = { extraFiles = {} },
      compare = { onDump = '', offDump = '', onGraph = '', offGraph = '', output = '',
        memoryBudget = '', workers = 0, rank = '', iteration = '', step = '' },
    },
  },
})
