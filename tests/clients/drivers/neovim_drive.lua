-- Drives Neovim (0.7+) through client-config/neovim/fusion_switch.lua, already set up by the
-- user init file: open the configuration, wait for diagnostics, ask for completion, run a
-- server command, then write what arrived as JSON to $FUSION_SWITCH_TEST_OUT.
local cfg = os.getenv('FUSION_SWITCH_TEST_CFG')
local line, character = tonumber(os.getenv('FUSION_SWITCH_TEST_LINE')), tonumber(os.getenv('FUSION_SWITCH_TEST_CHAR'))
local wanted = vim.split(os.getenv('FUSION_SWITCH_TEST_CODES'), ',')
local fs = require('fusion_switch')
local out = { version = vim.version(), settings = fs.settings() }

vim.cmd('edit ' .. vim.fn.fnameescape(cfg))
local buf = vim.api.nvim_get_current_buf()
out.filetype = vim.bo[buf].filetype
out.syntax = vim.bo[buf].syntax
out.attached = vim.wait(10000, function() return fs.client(buf) ~= nil end, 20)

local function codes()
  local seen = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    seen[tostring(d.code)] = true
  end
  return seen
end
out.all_codes_arrived = vim.wait(20000, function()
  local seen = codes()
  for _, code in ipairs(wanted) do
    if not seen[code] then return false end
  end
  return true
end, 50)
out.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(out.diagnostics, {
    lnum = d.lnum, col = d.col, severity = d.severity, code = tostring(d.code),
    source = d.source, message = d.message,
  })
end

local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line, character = character } }
local responses = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 10000) or {}
out.completion = {}
for _, response in pairs(responses) do
  local result = response.result or {}
  for _, item in ipairs(result.items or result) do
    table.insert(out.completion, item.label)
  end
end

local done = false
fs.execute('fusionSwitch.reloadCatalogue', buf, nil, function(err, result)
  out.command = { err = err and err.message or vim.NIL, result = result }
  done = true
end)
vim.wait(10000, function() return done end, 20)

-- :FusionSwitchTarget sends workspace/didChangeConfiguration; an A2 target has UB fusion.
vim.cmd('FusionSwitchTarget Ascend910B1')
out.retargeted = vim.wait(10000, function()
  local seen = codes()
  return seen['unknown-rule'] and not seen['ub-unsupported-on-target']
end, 50)

-- :FusionSwitchBisect takes the job's command line (it sent none: a review); fs.bisect runs
-- it by sh, the candidates from the fusion_result.json given
local bisect_job = os.getenv('FUSION_SWITCH_TEST_BISECT_JOB')
if bisect_job then
  local bisected = false
  fs.bisect(bisect_job, os.getenv('FUSION_SWITCH_TEST_FUSION_RESULT'), buf, function(err, result)
    out.bisect = { err = err and err.message or vim.NIL, result = result }
    bisected = true
  end)
  vim.wait(60000, function() return bisected end, 50)
  out.bisect_nargs = vim.api.nvim_get_commands({}).FusionSwitchBisect.nargs
end

local client = fs.client(buf)
out.client_name = client and client.name
-- :FusionSwitchCancelCompare leaves a running bisection alone (it cancelled the first
-- cancellable progress token of any kind: a review)
if client then
  local sent, notify = {}, client.notify
  client.notify = function(...)
    local args = { ... }
    local at = type(args[1]) == 'string' and 1 or 2 -- client.notify(m, p) or client:notify(m, p)
    table.insert(sent, { method = args[at], token = args[at + 1] and args[at + 1].token })
    return true
  end
  fs.progress['fusionSwitch/bisect/test'] = { cancellable = true, client_id = client.id }
  fs.cancel_compare(buf)
  client.notify = notify
  fs.progress['fusionSwitch/bisect/test'] = nil
  out.cancel_compare_sent = sent
end
if client then
  vim.lsp.stop_client(client.id)
  vim.wait(5000, function() return vim.lsp.get_client_by_id(client.id) == nil end, 50)
end
out.user_commands = {}
for name, _ in pairs(vim.api.nvim_get_commands({})) do
  if name:find('^FusionSwitch') then
    table.insert(out.user_commands, name)
  end
end
out.patterns = {}
for _, autocmd in ipairs(vim.api.nvim_get_autocmds({ group = 'fusion_switch', event = 'BufRead' })) do
  table.insert(out.patterns, autocmd.pattern)
end
local file = io.open(os.getenv('FUSION_SWITCH_TEST_OUT'), 'w')
file:write(vim.fn.json_encode(out))
file:close()
vim.cmd('qa!')
