-- Headless Neovim (0.7+) runs the recipe's comparison through `fusion-switch serve`: open a
-- config, run workspace/executeCommand fusionSwitch.compare on a generated case, wait for the
-- `fusion-suspect` diagnostic, write what came back as JSON.
-- Inputs (environment): FS_PYTHON, FS_FILE (the config), FS_OUT (result JSON), FS_ON_DUMP,
-- FS_OFF_DUMP, FS_ON_GRAPH, FS_OFF_GRAPH, FS_OUTPUT (comparison output folder).
local env = function(name) return os.getenv(name) end
local out = { errors = {}, messages = {} }

local function finish()
  local f = io.open(env('FS_OUT'), 'w')
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd('qa!')
end

local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(env('FS_FILE')))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = 'json'
  local id = vim.lsp.start_client({
    name = 'fusion-switch',
    cmd = { env('FS_PYTHON'), '-m', 'fusion_switch', 'serve' },
    root_dir = vim.fn.fnamemodify(env('FS_FILE'), ':h'),
    handlers = {
      ['window/showMessage'] = function(_, result)
        table.insert(out.messages, result.message)
      end,
    },
  })
  vim.lsp.buf_attach_client(buf, id)
  -- the config has a misspelt rule: its diagnostic says the server is up and has the file
  out.ready = vim.wait(20000, function() return #vim.diagnostic.get(buf) > 0 end, 50)

  local function suspects()
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      local lsp = (d.user_data or {}).lsp or {}
      if (d.code or lsp.code) == 'fusion-suspect' then
        table.insert(found, { line = d.lnum, col = d.col, severity = d.severity, message = d.message })
      end
    end
    return found
  end

  local params = {
    command = 'fusionSwitch.compare',
    arguments = { {
      cfgUri = vim.uri_from_bufnr(buf),
      onDump = env('FS_ON_DUMP'), offDump = env('FS_OFF_DUMP'),
      onGraph = env('FS_ON_GRAPH'), offGraph = env('FS_OFF_GRAPH'),
      output = env('FS_OUTPUT'),
    } },
  }
  local responses = vim.lsp.buf_request_sync(buf, 'workspace/executeCommand', params, 60000) or {}
  for _, response in pairs(responses) do
    if response.err then table.insert(out.errors, vim.inspect(response.err)) end
    out.result = response.result
  end
  out.diagnostics_arrived = vim.wait(20000, function() return #suspects() > 0 end, 50)
  out.suspects = suspects()

  vim.lsp.stop_client(id)
  vim.wait(3000, function() return vim.lsp.get_client_by_id(id) == nil end, 50)
end)
if not ok then table.insert(out.errors, tostring(err)) end
finish()
